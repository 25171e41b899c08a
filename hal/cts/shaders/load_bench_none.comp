// See load_bench.glsl.
#version 450
#extension GL_GOOGLE_include_directive : require
#define LOADS 0
#include "load_bench.glsl"
