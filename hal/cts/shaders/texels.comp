// dst[i] = dot(texelFetch(src, i), (1, 10, 100, 1000)) for i < count.
// Bindings: 0 src, a uniform texel buffer of R32G32B32A32_SFLOAT texels
// (BindingKind::kUniformTexelBuffer); 1 dst (float32). Push constants:
// { uint count; } (4 bytes). Workgroup: 64.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform samplerBuffer src;
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) dst[i] = dot(texelFetch(src, int(i)), vec4(1.0, 10.0, 100.0, 1000.0));
}
