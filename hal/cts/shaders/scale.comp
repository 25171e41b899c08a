// dst[i] = src[i] * scale for i < count. Bindings: 0 src, 1 dst (float32).
// Push constants: { float scale; uint count; } (8 bytes). Workgroup: 64.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push { float scale; uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) dst[i] = src[i] * pc.scale;
}
