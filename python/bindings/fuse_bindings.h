#pragma once
// Registers colo.fuse's C++ pieces on the colo._core module.

#include <pybind11/pybind11.h>

void bind_fuse(pybind11::module& m);
