// See load_bench.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define LOADS 3
#include "load_bench.glsl"
