// Reference signal-processing kernels: the windows, MelWeightMatrix, DFT and STFT, in double.
// DFT and STFT are direct O(n^2) transforms (exact enough, never fast); angles reduce j * k
// modulo n first so large indices keep their precision. The windows and the mel matrix follow
// the ONNX reference implementation, including its mel step of (high - low) / (bins + 2).
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "ops/signal.h"

namespace nfuse::backends::ref {
namespace {

using Complex = std::complex<double>;

// out[k] = sum_j in[j] * exp(-+2 pi i j k / n) for k < out.size(), reading in[j] as 0 past its
// end; inverse also divides by n.
void dft(const std::vector<Complex>& in, int64_t n, bool inverse, std::vector<Complex>& out) {
  const double sign = inverse ? 1.0 : -1.0;
  const int64_t used = std::min<int64_t>(n, static_cast<int64_t>(in.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    Complex acc = 0.0;
    for (int64_t j = 0; j < used; ++j) {
      const auto jk = static_cast<int64_t>((static_cast<__int128>(j) * static_cast<__int128>(k)) % n);
      const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>(jk) / static_cast<double>(n);
      acc += in[static_cast<size_t>(j)] * Complex(std::cos(angle), std::sin(angle));
    }
    out[k] = inverse ? acc / static_cast<double>(n) : acc;
  }
}

Status window(KernelArgs& a, double a0, double a1, double a2) {
  ir::Tensor& y = a.out(0);
  const int64_t size = y.numel();
  const bool periodic = a.attrs().get_int("periodic", 1) != 0;
  const double n1 = static_cast<double>(periodic ? size : size - 1);
  for (int64_t i = 0; i < size; ++i) {
    const double t = n1 > 0 ? 2.0 * std::numbers::pi * static_cast<double>(i) / n1 : 0.0;
    ir::store_from_double(y.dtype(), y.raw(), i, a0 - a1 * std::cos(t) + a2 * std::cos(2.0 * t));
  }
  return ok_status();
}

Status hann_window(KernelArgs& a) { return window(a, 0.5, 0.5, 0.0); }
Status hamming_window(KernelArgs& a) { return window(a, 25.0 / 46.0, 21.0 / 46.0, 0.0); }
Status blackman_window(KernelArgs& a) { return window(a, 0.42, 0.5, 0.08); }

Status mel_weight_matrix(KernelArgs& a) {
  const int64_t bins = a.in(0).get_int(0), dft_length = a.in(1).get_int(0), sample_rate = a.in(2).get_int(0);
  ir::Tensor& y = a.out(0);
  const int64_t spectrogram_bins = dft_length / 2 + 1;
  if (y.numel() != spectrogram_bins * bins) return a.error("output size does not match");
  if (sample_rate <= 0) return a.error("sample_rate must be positive");
  // The reference computes the mel edges and step in float32 (its inputs' type), the rest in double.
  const auto mel = [](float hz) { return 2595.0f * std::log10(1.0f + hz / 700.0f); };
  const float low = mel(static_cast<float>(a.in(3).get_double(0)));
  const float high = mel(static_cast<float>(a.in(4).get_double(0)));
  const float step = (high - low) / static_cast<float>(bins + 2);
  std::vector<int64_t> edges(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double m = static_cast<double>(i) * static_cast<double>(step) + static_cast<double>(low);
    const double hz = 700.0 * (std::pow(10.0, m / 2595.0) - 1.0);
    edges[static_cast<size_t>(i)] = static_cast<int64_t>(std::floor(static_cast<double>(dft_length + 1) * hz /
                                                                     static_cast<double>(sample_rate)));
  }
  std::vector<double> out(static_cast<size_t>(y.numel()), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) -> bool {
    if (row < 0 || row >= spectrogram_bins) return false;
    out[static_cast<size_t>(row * bins + col)] = v;
    return true;
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t lo = edges[static_cast<size_t>(i)], center = edges[static_cast<size_t>(i + 1)];
    const int64_t hi = edges[static_cast<size_t>(i + 2)];
    bool ok = true;
    if (center == lo) {
      ok = set(center, i, 1.0);
    } else {
      for (int64_t j = lo; j <= center && ok; ++j) {
        ok = set(j, i, static_cast<double>(j - lo) / static_cast<double>(center - lo));
      }
    }
    for (int64_t j = center; j < hi && ok; ++j) {
      ok = set(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - center));
    }
    if (!ok) return a.error("the mel band edges fall outside the spectrogram (check the hertz range)");
  }
  for (size_t i = 0; i < out.size(); ++i) ir::store_from_double(y.dtype(), y.raw(), static_cast<int64_t>(i), out[i]);
  return ok_status();
}

Status dft_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  const int rank = x.rank();
  if (rank < 2 || (x.dim(rank - 1) != 1 && x.dim(rank - 1) != 2)) return a.error("input must be [..., signal, 1 or 2]");
  NFUSE_ASSIGN_OR_RETURN(const int axis, ops::dft_axis(a.node, rank, a.node.opset >= 20 && a.has_in(2) ? &a.in(2) : nullptr));
  const int64_t parts = x.dim(rank - 1);
  const int64_t signal = x.dim(axis);
  const int64_t n = a.has_in(1) ? a.in(1).get_int(0) : signal;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int i = axis + 1; i < rank - 1; ++i) inner *= x.dim(i);
  if (y.rank() != rank || y.dim(rank - 1) != 2 || n < 1) return a.error("output shape does not match");
  const int64_t out_len = y.dim(axis);
  if (out_len > n || y.numel() != outer * out_len * inner * 2) return a.error("output shape does not match");
  const bool inverse = a.attrs().get_int("inverse", 0) != 0;
  std::vector<Complex> in(static_cast<size_t>(signal)), out(static_cast<size_t>(out_len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < signal; ++j) {
        const int64_t at = ((o * signal + j) * inner + i) * parts;
        in[static_cast<size_t>(j)] = Complex(x.get_double(at), parts == 2 ? x.get_double(at + 1) : 0.0);
      }
      dft(in, n, inverse, out);
      for (int64_t k = 0; k < out_len; ++k) {
        const int64_t at = ((o * out_len + k) * inner + i) * 2;
        ir::store_from_double(y.dtype(), y.raw(), at, out[static_cast<size_t>(k)].real());
        ir::store_from_double(y.dtype(), y.raw(), at + 1, out[static_cast<size_t>(k)].imag());
      }
    }
  }
  return ok_status();
}

Status stft(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2)) return a.error("signal must be [batch, length, 1 or 2]");
  const ir::Tensor* win = a.has_in(2) ? &a.in(2) : nullptr;
  const int64_t step = a.in(1).get_int(0);
  const int64_t frame = a.has_in(3) ? a.in(3).get_int(0) : win ? win->numel() : x.dim(1);
  if (win && win->numel() != frame) return a.error("window length must equal frame_length");
  const int64_t batch = x.dim(0), length = x.dim(1), parts = x.dim(2);
  if (y.rank() != 4 || y.dim(0) != batch || y.dim(3) != 2 || step < 1 || frame < 1) {
    return a.error("output shape does not match");
  }
  const int64_t frames = y.dim(1), out_bins = y.dim(2);
  if ((frames - 1) * step + frame > length || out_bins > frame) return a.error("output shape does not match");
  std::vector<Complex> in(static_cast<size_t>(frame)), out(static_cast<size_t>(out_bins));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame; ++j) {
        const int64_t at = (b * length + f * step + j) * parts;
        const double w = win ? win->get_double(j) : 1.0;
        in[static_cast<size_t>(j)] = Complex(x.get_double(at), parts == 2 ? x.get_double(at + 1) : 0.0) * w;
      }
      dft(in, frame, false, out);
      for (int64_t k = 0; k < out_bins; ++k) {
        const int64_t at = ((b * frames + f) * out_bins + k) * 2;
        ir::store_from_double(y.dtype(), y.raw(), at, out[static_cast<size_t>(k)].real());
        ir::store_from_double(y.dtype(), y.raw(), at + 1, out[static_cast<size_t>(k)].imag());
      }
    }
  }
  return ok_status();
}

}  // namespace

void register_signal_kernels(KernelRegistry& registry) {
  registry.add("HannWindow", hann_window);
  registry.add("HammingWindow", hamming_window);
  registry.add("BlackmanWindow", blackman_window);
  registry.add("MelWeightMatrix", mel_weight_matrix);
  registry.add("DFT", dft_kernel);
  registry.add("STFT", stft);
}

}  // namespace nfuse::backends::ref
