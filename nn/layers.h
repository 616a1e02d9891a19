// The built-in layers, with Keras's names, defaults and semantics.
//
// All take and return float32 NHWC / [batch, features] DeviceTensors.
// Kernels start glorot_uniform and biases zeros, as in Keras.
//
// Ownership and thread-safety: as Layer (layer.h).
#ifndef SLUICE_NN_LAYERS_H_
#define SLUICE_NN_LAYERS_H_

#include <string>

#include "sluice/nn/layer.h"
#include "sluice/nn/window.h"

namespace sluice::nn {

struct DenseOptions {
  Activation activation = Activation::kLinear;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::GlorotUniform();
  Initializer bias_initializer = Initializer::Zeros();
  std::string name = "dense";
};
// y = activation(x · kernel + bias) on the last axis; kernel [in, units].
// Inputs of rank > 2 are treated as [product of leading dims, in].
class Dense : public Layer {
 public:
  explicit Dense(int units, DenseOptions options = {});
  int units() const { return units_; }
  Status Build(const Shape& input_shape) override;
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
  std::string Describe() const override;

 protected:
  std::unique_ptr<Layer> CloneLayer() const override;

 private:
  int units_;
  DenseOptions options_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
  // From the last training call: x_ flattened to 2-D, the kernel as read.
  DeviceTensor x_, y_, kernel_value_;
  Shape x_shape_;
};

struct Conv2DOptions {
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::kValid;
  Activation activation = Activation::kLinear;
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::GlorotUniform();
  Initializer bias_initializer = Initializer::Zeros();
  std::string name = "conv2d";
};
// 2-D convolution over NHWC input with an HWIO kernel [kh, kw, in, filters].
class Conv2D : public Layer {
 public:
  Conv2D(int filters, int kernel_h, int kernel_w, Conv2DOptions options = {});
  Conv2D(int filters, int kernel_size, Conv2DOptions options = {})
      : Conv2D(filters, kernel_size, kernel_size, std::move(options)) {}
  Status Build(const Shape& input_shape) override;
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
  std::string Describe() const override;

 protected:
  std::unique_ptr<Layer> CloneLayer() const override;

 private:
  int filters_;
  Window2D window_;
  Conv2DOptions options_;
  Variable* kernel_ = nullptr;
  Variable* bias_ = nullptr;
  DeviceTensor x_, y_, kernel_value_;  // from the last training call
};

struct Pool2DOptions {
  int pool_h = 2, pool_w = 2;
  int stride_h = 0, stride_w = 0;  // 0: the pool size (Keras's default)
  Padding padding = Padding::kValid;
};
// MaxPooling2D / AveragePooling2D: Keras's defaults (2x2, strides = pool,
// valid padding).
class Pooling2D : public Layer {
 public:
  Pooling2D(PoolMode mode, Pool2DOptions options, std::string name);
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
  std::string Describe() const override;

 protected:
  std::unique_ptr<Layer> CloneLayer() const override;

 private:
  PoolMode mode_;
  Window2D window_;
  DeviceTensor x_, y_, workspace_;
};
class MaxPooling2D : public Pooling2D {
 public:
  explicit MaxPooling2D(Pool2DOptions options = {})
      : Pooling2D(PoolMode::kMax, options, "max_pooling2d") {}
};
class AveragePooling2D : public Pooling2D {
 public:
  explicit AveragePooling2D(Pool2DOptions options = {})
      : Pooling2D(PoolMode::kAverage, options, "average_pooling2d") {}
};

// [batch, d1, d2, ...] -> [batch, d1·d2·...] (a view, no copy).
class Flatten : public Layer {
 public:
  Flatten() : Layer("flatten") {}
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;

 protected:
  std::unique_ptr<Layer> CloneLayer() const override { return std::make_unique<Flatten>(); }

 private:
  Shape x_shape_;
};

// Applies an activation function.
class ActivationLayer : public Layer {
 public:
  explicit ActivationLayer(Activation f) : Layer("activation"), f_(f) {}
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
  std::string Describe() const override { return std::string(ActivationName(f_)); }

 protected:
  std::unique_ptr<Layer> CloneLayer() const override {
    return std::make_unique<ActivationLayer>(f_);
  }

 private:
  Activation f_;
  DeviceTensor y_;
};

// Inverted dropout: in training, zeroes each element with probability
// `rate` and scales the rest by 1 / (1 - rate); the identity otherwise.
// Masks come from the layer's seeded generator and a call counter, so a
// run is reproducible.
class Dropout : public Layer {
 public:
  explicit Dropout(float rate);
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
  std::string Describe() const override;

 protected:
  std::unique_ptr<Layer> CloneLayer() const override { return std::make_unique<Dropout>(rate_); }

 private:
  float rate_;
  uint64_t seed_ = 0;
  // Training calls so far, the mask's Philox stream, kept on the device
  // where the mask reads it: a recorded step draws a new mask each replay.
  DeviceTensor calls_;
  DeviceTensor mask_;
  bool identity_ = true;  // the last call did not drop
};

// y = float32(x) · scale + offset: takes uint8 images (or any numeric
// dtype) into the model, as keras.layers.Rescaling(1. / 255).
class Rescaling : public Layer {
 public:
  explicit Rescaling(float scale, float offset = 0.0f);
  Result<DeviceTensor> Call(const DeviceTensor& x, bool training) override;
  Result<DeviceTensor> Backward(const DeviceTensor& dy) override;
  std::string Describe() const override;

 protected:
  std::unique_ptr<Layer> CloneLayer() const override {
    return std::make_unique<Rescaling>(scale_, offset_);
  }

 private:
  float scale_, offset_;
};

}  // namespace sluice::nn

#endif  // SLUICE_NN_LAYERS_H_
