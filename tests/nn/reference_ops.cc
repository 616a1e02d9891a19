#include "reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::nn::reference {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t At(Nhwc d, int64_t n, int64_t h, int64_t w, int64_t c) {
  return ((n * d.h + h) * d.w + w) * d.c + c;
}

struct Geometry {
  Nhwc yd;
  int64_t pad_top, pad_left;
};

Geometry Geom(Nhwc xd, const Window2D& w, int64_t cout) {
  Geometry g;
  g.yd = {xd.n, 0, 0, cout};
  OutDim(xd.h, w.kernel_h, w.stride_h, w.padding, &g.yd.h, &g.pad_top);
  OutDim(xd.w, w.kernel_w, w.stride_w, w.padding, &g.yd.w, &g.pad_left);
  return g;
}

}  // namespace

Vec MatMul(const Vec& a, int64_t ar, int64_t ac, bool ta, const Vec& b, int64_t br, int64_t bc,
           bool tb, double beta, const Vec& c) {
  const int64_t m = ta ? ac : ar, k = ta ? ar : ac, n = tb ? br : bc;
  Vec out(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * ac + i] : a[i * ac + p];
        const double bv = tb ? b[j * bc + p] : b[p * bc + j];
        s += av * bv;
      }
      out[i * n + j] = s + (beta == 0 ? 0.0 : beta * c[i * n + j]);
    }
  }
  return out;
}

void OutDim(int64_t in, int k, int stride, Padding p, int64_t* out, int64_t* pad_before) {
  if (p == Padding::kValid) {
    *out = CeilDiv(in - k + 1, stride);
    *pad_before = 0;
  } else {
    *out = CeilDiv(in, stride);
    const int64_t total = std::max<int64_t>((*out - 1) * stride + k - in, 0);
    *pad_before = total / 2;
  }
}

Vec Conv2D(const Vec& x, Nhwc xd, const Vec& filter, int64_t cout, const Vec* bias,
           const Window2D& w, Nhwc* yd) {
  const Geometry g = Geom(xd, w, cout);
  *yd = g.yd;
  Vec y(yd->size());
  for (int64_t n = 0; n < yd->n; ++n)
    for (int64_t oh = 0; oh < yd->h; ++oh)
      for (int64_t ow = 0; ow < yd->w; ++ow)
        for (int64_t o = 0; o < cout; ++o) {
          double s = bias != nullptr ? (*bias)[o] : 0.0;
          for (int64_t kh = 0; kh < w.kernel_h; ++kh)
            for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
              const int64_t ih = oh * w.stride_h - g.pad_top + kh;
              const int64_t iw = ow * w.stride_w - g.pad_left + kw;
              if (ih < 0 || ih >= xd.h || iw < 0 || iw >= xd.w) continue;
              for (int64_t i = 0; i < xd.c; ++i) {
                s += x[At(xd, n, ih, iw, i)] *
                     filter[((kh * w.kernel_w + kw) * xd.c + i) * cout + o];
              }
            }
          y[At(*yd, n, oh, ow, o)] = s;
        }
  return y;
}

Vec Conv2DBackwardData(const Vec& dy, Nhwc yd, const Vec& filter, Nhwc xd, const Window2D& w) {
  const Geometry g = Geom(xd, w, yd.c);
  Vec dx(xd.size(), 0.0);
  for (int64_t n = 0; n < yd.n; ++n)
    for (int64_t oh = 0; oh < yd.h; ++oh)
      for (int64_t ow = 0; ow < yd.w; ++ow)
        for (int64_t kh = 0; kh < w.kernel_h; ++kh)
          for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
            const int64_t ih = oh * w.stride_h - g.pad_top + kh;
            const int64_t iw = ow * w.stride_w - g.pad_left + kw;
            if (ih < 0 || ih >= xd.h || iw < 0 || iw >= xd.w) continue;
            for (int64_t i = 0; i < xd.c; ++i)
              for (int64_t o = 0; o < yd.c; ++o)
                dx[At(xd, n, ih, iw, i)] += dy[At(yd, n, oh, ow, o)] *
                                            filter[((kh * w.kernel_w + kw) * xd.c + i) * yd.c + o];
          }
  return dx;
}

Vec Conv2DBackwardFilter(const Vec& x, Nhwc xd, const Vec& dy, Nhwc yd, const Window2D& w,
                         Vec* dbias) {
  const Geometry g = Geom(xd, w, yd.c);
  Vec df(int64_t{w.kernel_h} * w.kernel_w * xd.c * yd.c, 0.0);
  dbias->assign(yd.c, 0.0);
  for (int64_t n = 0; n < yd.n; ++n)
    for (int64_t oh = 0; oh < yd.h; ++oh)
      for (int64_t ow = 0; ow < yd.w; ++ow) {
        for (int64_t o = 0; o < yd.c; ++o) (*dbias)[o] += dy[At(yd, n, oh, ow, o)];
        for (int64_t kh = 0; kh < w.kernel_h; ++kh)
          for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
            const int64_t ih = oh * w.stride_h - g.pad_top + kh;
            const int64_t iw = ow * w.stride_w - g.pad_left + kw;
            if (ih < 0 || ih >= xd.h || iw < 0 || iw >= xd.w) continue;
            for (int64_t i = 0; i < xd.c; ++i)
              for (int64_t o = 0; o < yd.c; ++o)
                df[((kh * w.kernel_w + kw) * xd.c + i) * yd.c + o] +=
                    x[At(xd, n, ih, iw, i)] * dy[At(yd, n, oh, ow, o)];
          }
      }
  return df;
}

namespace {

// Calls fn(out_index, list of input indices inside x) for every output.
template <typename Fn>
void ForEachWindow(Nhwc xd, const Window2D& w, Nhwc* yd, Fn fn) {
  const Geometry g = Geom(xd, w, xd.c);
  *yd = g.yd;
  std::vector<int64_t> idx;
  for (int64_t n = 0; n < yd->n; ++n)
    for (int64_t oh = 0; oh < yd->h; ++oh)
      for (int64_t ow = 0; ow < yd->w; ++ow)
        for (int64_t c = 0; c < xd.c; ++c) {
          idx.clear();
          for (int64_t kh = 0; kh < w.kernel_h; ++kh)
            for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
              const int64_t ih = oh * w.stride_h - g.pad_top + kh;
              const int64_t iw = ow * w.stride_w - g.pad_left + kw;
              if (ih >= 0 && ih < xd.h && iw >= 0 && iw < xd.w) idx.push_back(At(xd, n, ih, iw, c));
            }
          fn(At(*yd, n, oh, ow, c), idx);
        }
}

}  // namespace

Vec Pool2D(PoolMode mode, const Vec& x, Nhwc xd, const Window2D& w, Nhwc* yd) {
  Vec y;
  Nhwc d;
  ForEachWindow(xd, w, &d, [&](int64_t, const std::vector<int64_t>&) {});
  y.resize(d.size());
  ForEachWindow(xd, w, yd, [&](int64_t o, const std::vector<int64_t>& idx) {
    double v = mode == PoolMode::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i : idx) v = mode == PoolMode::kMax ? std::max(v, x[i]) : v + x[i];
    y[o] = mode == PoolMode::kMax ? v : v / static_cast<double>(idx.size());
  });
  return y;
}

Vec Pool2DBackward(PoolMode mode, const Vec& x, Nhwc xd, const Vec& dy, const Window2D& w) {
  Vec dx(xd.size(), 0.0);
  Nhwc yd;
  ForEachWindow(xd, w, &yd, [&](int64_t o, const std::vector<int64_t>& idx) {
    if (mode == PoolMode::kMax) {
      int64_t best = idx[0];
      for (int64_t i : idx) {
        if (x[i] > x[best]) best = i;  // strict: the first maximum keeps it
      }
      dx[best] += dy[o];
    } else {
      for (int64_t i : idx) dx[i] += dy[o] / static_cast<double>(idx.size());
    }
  });
  return dx;
}

Vec Activation(int kind, const Vec& x, int64_t c) {
  Vec y(x.size());
  if (kind == 4) {  // softmax
    for (size_t r = 0; r < x.size() / c; ++r) {
      double max = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < c; ++j) max = std::max(max, x[r * c + j]);
      for (int64_t j = 0; j < c; ++j) sum += std::exp(x[r * c + j] - max);
      for (int64_t j = 0; j < c; ++j) y[r * c + j] = std::exp(x[r * c + j] - max) / sum;
    }
    return y;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    switch (kind) {
      case 0: y[i] = x[i]; break;
      case 1: y[i] = std::max(x[i], 0.0); break;
      case 2: y[i] = 1.0 / (1.0 + std::exp(-x[i])); break;
      case 3: y[i] = std::tanh(x[i]); break;
    }
  }
  return y;
}

Vec ActivationBackward(int kind, const Vec& y, const Vec& dy, int64_t c) {
  Vec dx(y.size());
  if (kind == 4) {
    for (size_t r = 0; r < y.size() / c; ++r) {
      // Jacobian of softmax: dy_i/dx_j = y_i (δij - y_j).
      for (int64_t j = 0; j < c; ++j) {
        double s = 0;
        for (int64_t i = 0; i < c; ++i) {
          s += dy[r * c + i] * y[r * c + i] * ((i == j ? 1.0 : 0.0) - y[r * c + j]);
        }
        dx[r * c + j] = s;
      }
    }
    return dx;
  }
  for (size_t i = 0; i < y.size(); ++i) {
    switch (kind) {
      case 0: dx[i] = dy[i]; break;
      case 1: dx[i] = y[i] > 0 ? dy[i] : 0.0; break;
      case 2: dx[i] = dy[i] * y[i] * (1 - y[i]); break;
      case 3: dx[i] = dy[i] * (1 - y[i] * y[i]); break;
    }
  }
  return dx;
}

Vec CrossEntropy(const Vec& pred, const Vec& labels, int64_t n, int64_t c, bool from_logits) {
  Vec loss(n, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    const double* p = pred.data() + r * c;
    const double* t = labels.data() + r * c;
    if (from_logits) {
      double max = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t j = 0; j < c; ++j) max = std::max(max, p[j]);
      for (int64_t j = 0; j < c; ++j) sum += std::exp(p[j] - max);
      const double lse = max + std::log(sum);
      for (int64_t j = 0; j < c; ++j) loss[r] -= t[j] * (p[j] - lse);
    } else {
      double sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += p[j];
      for (int64_t j = 0; j < c; ++j) {
        const double q = std::clamp(p[j] / sum, 1e-7, 1 - 1e-7);
        loss[r] -= t[j] * std::log(q);
      }
    }
  }
  return loss;
}

Vec MeanSquaredError(const Vec& pred, const Vec& target, int64_t n) {
  const int64_t d = static_cast<int64_t>(pred.size()) / n;
  Vec loss(n, 0.0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t j = 0; j < d; ++j) {
      const double e = pred[r * d + j] - target[r * d + j];
      loss[r] += e * e / d;
    }
  }
  return loss;
}

void Sgd(const Vec& grad, double lr, double momentum, bool nesterov, Vec* var, Vec* velocity) {
  for (size_t i = 0; i < grad.size(); ++i) {
    if (momentum == 0) {
      (*var)[i] -= lr * grad[i];
      continue;
    }
    (*velocity)[i] = momentum * (*velocity)[i] - lr * grad[i];
    (*var)[i] += nesterov ? momentum * (*velocity)[i] - lr * grad[i] : (*velocity)[i];
  }
}

void Adam(const Vec& grad, double lr, double b1, double b2, double eps, int64_t t, Vec* var, Vec* m,
          Vec* v) {
  const double lr_t = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
  for (size_t i = 0; i < grad.size(); ++i) {
    (*m)[i] += (grad[i] - (*m)[i]) * (1 - b1);
    (*v)[i] += (grad[i] * grad[i] - (*v)[i]) * (1 - b2);
    (*var)[i] -= lr_t * (*m)[i] / (std::sqrt((*v)[i]) + eps);
  }
}

}  // namespace sluice::nn::reference
