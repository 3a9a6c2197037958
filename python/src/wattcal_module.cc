// wattcal._wattcal: the Python module's native part, a top floor over the use cases
// (pipeline/usecases/) like the stage commands in stages/: it reads, calls one use case and hands
// back what the executables write (the same writer functions, so the same bytes), computing
// nothing itself. The tables go back as the CSV text wattcal-predict / wattcal-ingest write
// (python/wattcal/_tables.py turns them into DataFrames or records). Errors keep the
// executables' messages: InputError, OptionError and FitError become wattcal.InputError
// (a ValueError), wattcal.OptionError (a ValueError) and wattcal.FitError (a RuntimeError).
#include <optional>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ingest/capture.h"
#include "io/corpus_io.h"
#include "io/gpu_description.h"
#include "model/activity_prediction.h"
#include "model/app_prediction.h"
#include "model/model_io.h"
#include "usecases/calibrate_stage.h"
#include "usecases/calibration.h"
#include "usecases/capture_prediction.h"
#include "usecases/predict_stage.h"
#include "usecases/validate_stage.h"
#include "util/errors.h"

namespace py = pybind11;

namespace wattcal {
namespace {

// A capture as read_capture holds it: the ingested windows and the GPU description that turned
// the counters into utilisations, with the paths the messages name.
struct NativeCapture {
  CaptureReport report;
  GpuDescription gpu;
  std::vector<std::string> dirs;
  std::string gpu_path;
};

NativeCapture ReadCapture(const std::vector<std::string>& dirs, const std::string& gpu_path,
                          bool require_power_log, bool allow_other_gpu) {
  if (dirs.empty()) throw OptionError("read_capture: give at least one capture directory");
  NativeCapture c;
  CaptureOptions options;
  options.require_power_log = require_power_log;
  options.allow_other_gpu = allow_other_gpu;
  py::gil_scoped_release release;
  // An ncu description, or a field set (a capture's gpm_fields.csv, DCGM fields) whose description
  // is the one the report made of it, as wattcal-ingest and wattcal-predict --capture take either.
  c.report = IngestCapturesDescribedBy(dirs, gpu_path, options);
  c.gpu = PredictionDescription(c.report, gpu_path);
  c.dirs = dirs;
  c.gpu_path = gpu_path;
  return c;
}

// What PredictCapture gives, as wattcal-predict --capture writes it: --out, --breakdown-out and,
// with what-ifs, --what-if-out; the summary line it logs.
py::dict PredictCaptureTables(const PowerModel& model, const std::string& model_path,
                              const NativeCapture& capture, std::optional<double> power_limit_w,
                              bool allow_other_gpu, const std::vector<double>& at_clock_mhz,
                              const std::vector<double>& at_power_limit_w) {
  for (double f : at_clock_mhz) {
    if (!(f > 0.0 && f <= 10000.0))
      throw OptionError("at_clock " + std::to_string(f) + " must lie in (0, 10000] MHz");
  }
  for (double w : at_power_limit_w) {
    if (!(w > 0.0 && w <= 10000.0))
      throw OptionError("at_power_limit_w " + std::to_string(w) + " must lie in (0, 10000] W");
  }
  if (power_limit_w && !(*power_limit_w > 0.0 && *power_limit_w <= 10000.0))
    throw OptionError(
        "power_limit_w must lie in (0, 10000] W (None: the capture's, else the model's)");
  std::string apps, breakdown, what_if, summary;
  {
    py::gil_scoped_release release;
    CapturePredictionRequest request;
    request.power_limit_w = power_limit_w;
    for (const std::string& d : capture.dirs)
      request.source += (request.source.empty() ? "" : ", ") + d;
    request.other_gpu =
        CheckModelGpu(model, capture.report, capture.gpu,
                      {model_path, capture.dirs.front(), capture.gpu_path}, allow_other_gpu);
    const CapturePrediction prediction =
        PredictCapture(model, capture.report, capture.gpu, request);
    apps = AppPredictionsToCsv(prediction.rows);
    breakdown = AppBreakdownToCsv(model, prediction.rows);
    summary = AppPredictionSummary(model, prediction.rows, prediction.limit_w);
    if (!at_clock_mhz.empty() || !at_power_limit_w.empty()) {
      WhatIfSettings settings;
      settings.clocks_mhz = at_clock_mhz;
      settings.limits_w = at_power_limit_w;
      const std::string label =
          (model.vf_curve.known() ? "model_vf_curve:" : "model_voltages:") + model_path;
      what_if = WhatIfToCsv(PredictCaptureWhatIf(model, prediction, settings, nullptr), label);
    }
  }
  py::dict out;
  out["apps"] = apps;
  out["breakdown"] = breakdown;
  out["what_if"] = what_if;
  out["summary"] = summary;
  return out;
}

// wattcal-predict --activity FILE --breakdown: the rows of a tidy CSV (or gpmTOOL file).
std::string PredictActivityTable(const PowerModel& model, const std::string& activity_path,
                                 bool fixed, std::optional<double> power_limit_w) {
  py::gil_scoped_release release;
  const Corpus activity = ReadCorpus(activity_path);
  return ActivityPredictionsToCsv(model, PredictActivityRows(model, activity, fixed, power_limit_w),
                                  true);
}

CalibrationMethod MethodNamed(const std::string& name) {
  for (CalibrationMethod m : CalibrationMethods()) {
    if (name == CalibrationMethodName(m)) return m;
  }
  throw OptionError("method '" + name + "': expected auto, dvfs or fixed");
}

// wattcal-calibrate --train NAME --method METHOD --bootstrap N --seed S [--keep-flagged]: the
// options checked by the command's own Check(), the corpus from `read`.
template <typename ReadCorpusFn>
PowerModel Calibrate(const std::string& train_name, const std::string& method, int bootstrap,
                     uint64_t seed, bool keep_flagged, int threads, ReadCorpusFn read) {
  CalibrateStageOptions o;
  o.train_path = train_name;
  o.out_path = "model.json";
  o.calibration.method = MethodNamed(method);
  if (o.calibration.method == CalibrationMethod::kAccelWattch)
    throw OptionError("method 'accelwattch' takes a component table: use wattcal-calibrate");
  o.calibration.options.keep_flagged = keep_flagged;
  o.calibration.options.threads = threads;
  o.bootstrap = bootstrap;
  o.seed = seed;
  const CalibrateCheckedOptions checked = o.Check();
  py::gil_scoped_release release;
  return RunCalibration(read(checked.corpus), checked.request).model;
}

ValidateMode ValidateModeNamed(const std::string& name) {
  for (ValidateMode m : ValidateModes()) {
    if (name == ValidateModeName(m)) return m;
  }
  throw OptionError("mode '" + name + "': expected auto, dvfs, fixed or scaling");
}

// wattcal-validate, cross-validation (train_path, folds) or held-out (model_path, heldout_path),
// writing its predictions and metrics where the caller says (a temporary folder).
void Validate(const std::string& train_path, int folds, unsigned seed,
              const std::string& model_path, const std::string& heldout_path,
              const std::string& mode, const std::string& predictions_path,
              const std::string& metrics_path) {
  ValidateStageOptions o;
  o.train_path = train_path;
  o.cv_folds = folds;
  o.cv_seed = seed;
  o.model_path = model_path;
  o.heldout_path = heldout_path;
  o.mode = ValidateModeNamed(mode);
  o.predictions_path = predictions_path;
  o.metrics_path = metrics_path;
  o.workload_plot = false;
  py::gil_scoped_release release;
  RunValidateStage(o);
}

// Raises `type` with the error's message and, for InputError, its file, line and field.
void SetError(const py::object& type, const std::exception& e, const InputError* input) {
  py::object error = type(e.what());
  if (input != nullptr) {
    error.attr("file") = input->file();
    error.attr("line") = input->line();
    error.attr("field") = input->field();
  }
  PyErr_SetObject(type.ptr(), error.ptr());
}

}  // namespace
}  // namespace wattcal

PYBIND11_MODULE(_wattcal, m) {
  using namespace wattcal;
  m.doc() = "wattcal's native part: the use cases of the C++ library (see the wattcal package)";
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<OptionError> option_error(m, "OptionError", PyExc_ValueError);
  static py::exception<FitError> fit_error(m, "FitError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      SetError(input_error, e, &e);
    } catch (const OptionError& e) {
      SetError(option_error, e, nullptr);
    } catch (const FitError& e) {
      SetError(fit_error, e, nullptr);
    }
  });

  py::class_<PowerModel>(m, "NativeModel")
      .def("to_json", &ModelToJson, "The model file's text, as wattcal-calibrate writes it")
      .def("to_gpmtool", &ModelToGpmtoolCsv, "gpmTOOL's model format (--export-gpmtool)");
  m.def("read_model", &ReadModel, py::arg("path"), "Reads a model file (JSON or gpmTOOL)");

  py::class_<NativeCapture>(m, "NativeCapture")
      .def("windows_csv", [](const NativeCapture& c) { return c.report.WindowsCsv(); })
      .def("measured_csv",
           [](const NativeCapture& c) { return CorpusToTidyCsv(c.report.ToCorpus()); })
      .def("workloads_csv",
           [](const NativeCapture& c) { return CorpusToTidyCsv(c.report.ToWorkloadCorpus()); })
      .def("summary", [](const NativeCapture& c) { return c.report.Summary(); })
      .def_property_readonly("warnings", [](const NativeCapture& c) { return c.report.warnings; })
      .def_property_readonly("power_limit_w",
                             [](const NativeCapture& c) { return c.report.power_limit_w; })
      .def_property_readonly("recorded_on",
                             [](const NativeCapture& c) { return c.report.recorded_on.name; })
      .def_property_readonly("dirs", [](const NativeCapture& c) { return c.dirs; })
      .def_property_readonly("gpu_path", [](const NativeCapture& c) { return c.gpu_path; });
  m.def("read_capture", &ReadCapture, py::arg("dirs"), py::arg("gpu_path"),
        py::arg("require_power_log"), py::arg("allow_other_gpu"));

  m.def("predict_capture", &PredictCaptureTables, py::arg("model"), py::arg("model_path"),
        py::arg("capture"), py::arg("power_limit_w"), py::arg("allow_other_gpu"),
        py::arg("at_clock_mhz"), py::arg("at_power_limit_w"));
  m.def("predict_activity", &PredictActivityTable, py::arg("model"), py::arg("activity_path"),
        py::arg("fixed"), py::arg("power_limit_w"));
  m.def(
      "calibrate_file",
      [](const std::string& path, const std::string& method, int bootstrap, uint64_t seed,
         bool keep_flagged, int threads) {
        return Calibrate(path, method, bootstrap, seed, keep_flagged, threads,
                         [&](const CorpusReadOptions& o) { return ReadCorpus(path, o); });
      },
      py::arg("path"), py::arg("method"), py::arg("bootstrap"), py::arg("seed"),
      py::arg("keep_flagged"), py::arg("threads"));
  m.def(
      "calibrate_capture",
      [](const NativeCapture& c, const std::string& method, int bootstrap, uint64_t seed,
         bool keep_flagged, int threads) {
        return Calibrate(c.dirs.front(), method, bootstrap, seed, keep_flagged, threads,
                         [&](const CorpusReadOptions&) { return c.report.ToCorpus(); });
      },
      py::arg("capture"), py::arg("method"), py::arg("bootstrap"), py::arg("seed"),
      py::arg("keep_flagged"), py::arg("threads"));
  m.def("validate", &Validate, py::arg("train_path"), py::arg("folds"), py::arg("seed"),
        py::arg("model_path"), py::arg("heldout_path"), py::arg("mode"),
        py::arg("predictions_path"), py::arg("metrics_path"));
}
