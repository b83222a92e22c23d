#pragma once
// Registers the shared loader's consumer and the image pipeline on colo._core.

#include <pybind11/pybind11.h>

void bind_data(pybind11::module& m);
