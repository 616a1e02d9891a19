// Naive double-precision reference implementations of the Backend ops, for
// tests. Written from the definitions (TensorFlow / Keras semantics), with
// no attempt at speed, so a backend can be checked against them.
#ifndef SLUICE_TESTS_NN_REFERENCE_OPS_H_
#define SLUICE_TESTS_NN_REFERENCE_OPS_H_

#include <cstdint>
#include <vector>

#include "sluice/nn/window.h"

namespace sluice::nn::reference {

using Vec = std::vector<double>;

// An NHWC image batch's dimensions.
struct Nhwc {
  int64_t n, h, w, c;
  int64_t size() const { return n * h * w * c; }
};

// c = op(a) · op(b) + beta · c, a stored [ar, ac], b stored [br, bc].
Vec MatMul(const Vec& a, int64_t ar, int64_t ac, bool ta, const Vec& b, int64_t br, int64_t bc,
           bool tb, double beta, const Vec& c);

// TensorFlow's output size and leading padding for one dimension.
void OutDim(int64_t in, int k, int stride, Padding p, int64_t* out, int64_t* pad_before);

// Convolution, x NHWC, filter HWIO [kh, kw, x.c, cout], optional bias [cout].
Vec Conv2D(const Vec& x, Nhwc xd, const Vec& filter, int64_t cout, const Vec* bias,
           const Window2D& w, Nhwc* yd);
// dx for dy (yd) and filter.
Vec Conv2DBackwardData(const Vec& dy, Nhwc yd, const Vec& filter, Nhwc xd, const Window2D& w);
// dfilter (HWIO) and dbias for x and dy.
Vec Conv2DBackwardFilter(const Vec& x, Nhwc xd, const Vec& dy, Nhwc yd, const Window2D& w,
                         Vec* dbias);

// Max (padding ignored) or average (divided by the elements inside x).
Vec Pool2D(PoolMode mode, const Vec& x, Nhwc xd, const Window2D& w, Nhwc* yd);
// Max: all of dy to the first maximum of each window in row-major window
// order; average: dy / count spread over the window's elements inside x.
Vec Pool2DBackward(PoolMode mode, const Vec& x, Nhwc xd, const Vec& dy, const Window2D& w);

// Elementwise activations and their backward from y; softmax over rows of c.
Vec Activation(int kind, const Vec& x, int64_t c);  // kind: static_cast<int>(nn::Activation)
Vec ActivationBackward(int kind, const Vec& y, const Vec& dy, int64_t c);

// Per-row cross-entropy of pred [n, c] against dense labels [n, c]
// (one-hot rows for class ids), Keras's way.
Vec CrossEntropy(const Vec& pred, const Vec& labels, int64_t n, int64_t c, bool from_logits);
// Per-row mean of squared differences over d elements.
Vec MeanSquaredError(const Vec& pred, const Vec& target, int64_t n);

// One Keras SGD / Adam step, in place.
void Sgd(const Vec& grad, double lr, double momentum, bool nesterov, Vec* var, Vec* velocity);
void Adam(const Vec& grad, double lr, double b1, double b2, double eps, int64_t t, Vec* var, Vec* m,
          Vec* v);

}  // namespace sluice::nn::reference

#endif  // SLUICE_TESTS_NN_REFERENCE_OPS_H_
