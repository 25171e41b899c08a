// c[i] = a[i] + b[i] for i < count. Bindings: 0 a, 1 b, 2 c (float32).
// Push constants: { uint count; } (4 bytes). Workgroup: 64.
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) c[i] = a[i] + b[i];
}
