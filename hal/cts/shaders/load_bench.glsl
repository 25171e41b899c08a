// The body of the load-path microbenchmark shaders (load_bench_*.comp, run
// by hal/cts/load_bench.cc): one invocation is an 8 x 8 register block
// (8 output channels x 8 columns) over 256 input channels, the shape of a
// 1x1 conv block, with its input row and weights read four ways (LOADS):
//   1 float storage-buffer loads, 2 vec4 storage-buffer loads,
//   3 vec4 texel fetches (uniform texel buffers), 0 no loads at all.
// Bindings: 0 x (N * 8 floats per input channel), 1 w (4 x 8 x 256 floats),
// 2 out (one float per invocation). Workgroup 64, 8192 invocations.
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 64) in;
#if LOADS == 1
layout(set = 0, binding = 0, std430) restrict readonly buffer X { float x[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer W { float w[]; };
#elif LOADS == 2
layout(set = 0, binding = 0, std430) restrict readonly buffer X { vec4 x[]; };
layout(set = 0, binding = 1, std430) restrict readonly buffer W { vec4 w[]; };
#elif LOADS == 3
layout(set = 0, binding = 0) uniform samplerBuffer x;
layout(set = 0, binding = 1) uniform samplerBuffer w;
#endif
layout(set = 0, binding = 2, std430) restrict writeonly buffer O { float o[]; };
const int kChannels = 256, kStride = 8192 * 8;
void main() {
  const int gid = int(gl_GlobalInvocationID.x), cb = int(gl_WorkGroupID.x) % 4;
  float acc[64];
  [[unroll]] for (int i = 0; i < 64; ++i) acc[i] = 0.0;
  for (int ic = 0; ic < kChannels; ++ic) {
    vec4 a0, a1, w0, w1;
#if LOADS == 1
    const int xb = ic * kStride + gid * 8, wb = (cb * kChannels + ic) * 8;
    a0 = vec4(x[xb], x[xb + 1], x[xb + 2], x[xb + 3]);
    a1 = vec4(x[xb + 4], x[xb + 5], x[xb + 6], x[xb + 7]);
    w0 = vec4(w[wb], w[wb + 1], w[wb + 2], w[wb + 3]);
    w1 = vec4(w[wb + 4], w[wb + 5], w[wb + 6], w[wb + 7]);
#elif LOADS == 2
    const int xb = (ic * kStride + gid * 8) / 4, wb = (cb * kChannels + ic) * 2;
    a0 = x[xb]; a1 = x[xb + 1]; w0 = w[wb]; w1 = w[wb + 1];
#elif LOADS == 3
    const int xb = (ic * kStride + gid * 8) / 4, wb = (cb * kChannels + ic) * 2;
    a0 = texelFetch(x, xb); a1 = texelFetch(x, xb + 1);
    w0 = texelFetch(w, wb); w1 = texelFetch(w, wb + 1);
#else
    a0 = vec4(ic, ic + 1, ic + 2, ic + 3); a1 = a0 + 4.0;
    w0 = vec4(0.5, 0.25, 0.125, 2.0) * float(cb + 1); w1 = w0 * 0.5;
#endif
    const float xr[8] = float[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
    const float wv[8] = float[8](w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w);
    [[unroll]] for (int t = 0; t < 8; ++t)
      [[unroll]] for (int c = 0; c < 8; ++c) acc[t * 8 + c] = fma(xr[c], wv[t], acc[t * 8 + c]);
  }
  float s = 0.0;
  [[unroll]] for (int i = 0; i < 64; ++i) s += acc[i];
  o[gid] = s;
}
