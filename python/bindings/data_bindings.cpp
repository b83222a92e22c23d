#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "colo/data/device_ring.h"
#include "colo/data/image_pipeline.h"
#include "colo/data/loader_server.h"
#include "colo/data/pixel_normalise.h"
#include "colo/data/shared_loader.h"
#include "colo/gpu/torch_device.h"
#include "data_bindings.h"

namespace py = pybind11;

namespace {

void check_labels(const at::Tensor& labels, int64_t batch) {
  if (!labels.is_contiguous() || labels.device().type() != c10::DeviceType::CPU ||
      labels.scalar_type() != at::kLong || labels.numel() != batch) {
    throw std::invalid_argument("labels must be a contiguous CPU int64 tensor of the batch's size");
  }
}

void check_batch(const at::Tensor& pixels, const at::Tensor& labels, int64_t batch, int64_t sample_bytes) {
  if (!pixels.is_contiguous() || pixels.device().type() != c10::DeviceType::CPU ||
      pixels.scalar_type() != at::kByte || pixels.numel() != batch * sample_bytes) {
    throw std::invalid_argument("pixels must be a contiguous CPU uint8 tensor of the batch's size");
  }
  check_labels(labels, batch);
}

// A float32 CPU tensor of `numel` elements and per-channel `scale` and
// `shift` of `channels` values, or std::invalid_argument.
void check_normalised(const at::Tensor& out, int64_t numel, const std::vector<float>& scale,
                      const std::vector<float>& shift, int64_t channels) {
  if (!out.is_contiguous() || out.device().type() != c10::DeviceType::CPU || out.scalar_type() != at::kFloat ||
      out.numel() != numel) {
    throw std::invalid_argument("out must be a contiguous CPU float32 tensor of the batch's size");
  }
  if (static_cast<int64_t>(scale.size()) != channels || static_cast<int64_t>(shift.size()) != channels) {
    throw std::invalid_argument("scale and shift need one value per channel");
  }
}

// Raises the Python signal pending on this thread (KeyboardInterrupt for
// Ctrl-C) in a consumer's wait for its producer, which runs without the GIL.
void check_python_signals() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

}  // namespace

void bind_data(py::module& m) {
  using colo::data::SharedLoaderClient;
  py::register_exception<colo::data::ProducerLost>(m, "ProducerLost", PyExc_RuntimeError);

  m.def("sleep_while_waiting", [](const std::string& device) {
    return colo::gpu::sleep_while_waiting(c10::Device(device));
  });
  m.def("loader_spec", [](const std::string& path) {
    colo::data::LoaderServeSpec spec = colo::data::parse_loader_serve_spec(path);
    py::dict d;
    d["address"] = spec.address;
    d["root"] = spec.pipeline.root;
    d["size"] = spec.pipeline.size;
    d["threads"] = spec.pipeline.threads;
    d["mean"] = spec.pipeline.mean;
    d["std"] = spec.pipeline.std;
    d["chunk"] = spec.chunk;
    return d;
  }, "The data file's settings as colo loader serve reads them (address, root, size, ...).");

  py::class_<SharedLoaderClient>(m, "SharedLoaderClient")
      .def(py::init([](const std::string& address, int64_t batch_size, double timeout_s) {
             py::gil_scoped_release release;  // connecting waits for the producer
             return std::make_unique<SharedLoaderClient>(address, batch_size, timeout_s, check_python_signals);
           }),
           py::arg("address"), py::arg("batch_size"), py::arg("timeout_s") = 10.0)
      .def("next_batch", [](SharedLoaderClient& c, at::Tensor pixels, at::Tensor labels) {
             std::vector<int64_t> shape = c.sample_shape();
             check_batch(pixels, labels, c.batch_size(), shape[0] * shape[1] * shape[2]);
             py::gil_scoped_release release;
             c.next_batch(pixels.data_ptr<uint8_t>(), labels.data_ptr<int64_t>());
           })
      .def_property_readonly("batch_size", &SharedLoaderClient::batch_size)
      .def_property_readonly("sample_shape", &SharedLoaderClient::sample_shape)
      .def_property_readonly("mean", &SharedLoaderClient::mean)
      .def_property_readonly("std", &SharedLoaderClient::std)
      .def_property_readonly("classes", &SharedLoaderClient::classes)
      .def_property_readonly("class_names", &SharedLoaderClient::class_names)
      .def_property_readonly("epoch_samples", &SharedLoaderClient::epoch_samples)
      .def_property_readonly("batches_per_epoch", &SharedLoaderClient::batches_per_epoch)
      .def_property_readonly("device_ring", [](const SharedLoaderClient& c) -> py::object {
             return c.device_ring().is_object() ? py::object(py::str(c.device_ring().dump())) : py::object(py::none());
           }, "The producer's device ring as JSON (handle, device, bytes), or None.")
      // Its wait may be long (a start group's): other Python threads run meanwhile.
      .def("start_reading", &SharedLoaderClient::start_reading, py::call_guard<py::gil_scoped_release>())
      .def("next_batch_normalised", [](SharedLoaderClient& c, at::Tensor out, at::Tensor labels,
                                       const std::vector<float>& scale, const std::vector<float>& shift) {
             std::vector<int64_t> shape = c.sample_shape();
             const int64_t sample = shape[0] * shape[1] * shape[2];
             check_normalised(out, c.batch_size() * sample, scale, shift, shape[0]);
             check_labels(labels, c.batch_size());
             py::gil_scoped_release release;
             c.next_batch_normalised(out.data_ptr<float>(), labels.data_ptr<int64_t>(), scale.data(), shift.data());
           }, "The next batch read in place from the ring, as pixel * scale[c] + shift[c] into float32 `out`.")
      .def("stats", [](const SharedLoaderClient& c) { return c.stats().dump(); });

  py::class_<colo::data::DeviceRingReader>(m, "DeviceRingReader")
      .def(py::init([](SharedLoaderClient& client, const std::string& device) {
             return std::make_unique<colo::data::DeviceRingReader>(client, c10::Device(device));
           }),
           py::arg("client"), py::arg("device"), py::keep_alive<1, 2>(),
           "Maps the producer's device ring (CUDA IPC) onto `device`; RuntimeError when it cannot.")
      .def("next_batch", [](colo::data::DeviceRingReader& r) {
             py::gil_scoped_release release;
             return r.next();
           }, "The next batch (uint8 pixels, int64 labels) on the reader's device, copied from the ring on a "
              "stream of its own and ready for work queued after it on the current stream.");

  m.def("normalise_pixels", [](at::Tensor pixels, at::Tensor out, const std::vector<float>& scale,
                               const std::vector<float>& shift) {
          if (!pixels.is_contiguous() || pixels.device().type() != c10::DeviceType::CPU ||
              pixels.scalar_type() != at::kByte || pixels.dim() != 4) {
            throw std::invalid_argument("pixels must be a contiguous CPU uint8 tensor [N, C, H, W]");
          }
          check_normalised(out, pixels.numel(), scale, shift, pixels.size(1));
          py::gil_scoped_release release;
          colo::data::normalise_pixels(pixels.data_ptr<uint8_t>(), pixels.size(0), pixels.size(1),
                                       pixels.size(2) * pixels.size(3), scale.data(), shift.data(),
                                       out.data_ptr<float>());
        }, "out = pixels * scale[c] + shift[c], uint8 [N, C, H, W] to float32, in one pass.");

  py::class_<colo::data::ImageDecoder>(m, "ImageDecoder")
      .def(py::init([](const std::string& data_file, int64_t threads) {
             colo::data::ImagePipelineSpec spec = colo::data::parse_loader_serve_spec(data_file).pipeline;
             if (threads > 0) spec.threads = threads;
             return std::make_unique<colo::data::ImageDecoder>(colo::data::scan_image_folder(spec.root), spec);
           }),
           py::arg("data_file"), py::arg("threads") = 0)
      .def_property_readonly("size", [](const colo::data::ImageDecoder& d) { return d.folder().size(); })
      .def_property_readonly("side", [](const colo::data::ImageDecoder& d) { return d.spec().size; })
      .def_property_readonly("classes", [](const colo::data::ImageDecoder& d) { return d.folder().classes.size(); })
      .def_property_readonly("class_names", [](const colo::data::ImageDecoder& d) { return d.folder().classes; })
      .def_property_readonly("mean", [](const colo::data::ImageDecoder& d) { return d.spec().mean; })
      .def_property_readonly("std", [](const colo::data::ImageDecoder& d) { return d.spec().std; })
      .def("fill", [](colo::data::ImageDecoder& d, at::Tensor indices, uint64_t draw, at::Tensor pixels,
                      at::Tensor labels) {
             if (!indices.is_contiguous() || indices.scalar_type() != at::kLong) {
               throw std::invalid_argument("indices must be a contiguous int64 tensor");
             }
             check_batch(pixels, labels, indices.numel(), colo::data::sample_bytes(d.spec()));
             py::gil_scoped_release release;
             d.fill(indices.data_ptr<int64_t>(), indices.numel(), draw, pixels.data_ptr<uint8_t>(),
                    labels.data_ptr<int64_t>());
           }, "Decodes and augments images `indices` into uint8 [n, 3, S, S] `pixels` and `labels`.");
}
