/* kiln_jni.c: the thin JNI layer of the Android sample (C99 over the public
 * C API, include/kiln/kiln.h), used by dev.kiln.Kiln. The same file builds
 * for Android (the NDK; AAssetManager support) and for the host JVM (the
 * JUnit test in CI, samples/android/CMakeLists.txt).
 *
 * One native session = instance + Vulkan device + the modules linked in one
 * context. Modules are read zero-copy:
 *   - from direct ByteBuffers (nativeCreate): the Java object keeps the
 *     buffers alive as long as the session;
 *   - on Android, from APK assets (nativeCreateFromAssets): each asset is
 *     opened with AASSET_MODE_BUFFER and its bytes taken with
 *     AAsset_getBuffer (the asset must be stored uncompressed:
 *     `androidResources { noCompress += "kiln" }`), kept open until close.
 * Tensors crossing JNI are f32 only: inputs are flat float[] whose length
 * must be the argument's element count (shape from the function
 * signature); results come back as float[][].
 * Errors throw java.lang.IllegalStateException with the runtime's status
 * message ("invoke: INVALID_ARGUMENT: ..."); nothing aborts. */
#include <jni.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __ANDROID__
#include <android/asset_manager.h>
#include <android/asset_manager_jni.h>
#endif

#include "kiln/kiln.h"

typedef struct session {
  kiln_instance_t instance;
  kiln_device_t device;
  kiln_context_t context;
  size_t module_count;
  kiln_module_t* modules;
#ifdef __ANDROID__
  AAsset** assets; /* module_count entries (NULL for buffer modules) */
#endif
} session;

static void throw_state(JNIEnv* env, const char* what, kiln_status_t status) {
  char msg[1024];
  jclass cls = (*env)->FindClass(env, "java/lang/IllegalStateException");
  if (status) {
    snprintf(msg, sizeof(msg), "%s: %s: %s", what, kiln_status_code_name(kiln_status_code(status)),
             kiln_status_message(status));
    kiln_status_free(status);
  } else {
    snprintf(msg, sizeof(msg), "%s", what);
  }
  if (cls) (*env)->ThrowNew(env, cls, msg);
}

static void session_free(session* s) {
  size_t i;
  if (!s) return;
  kiln_context_release(s->context);
  for (i = 0; i < s->module_count; ++i) kiln_module_release(s->modules[i]);
#ifdef __ANDROID__
  for (i = 0; s->assets && i < s->module_count; ++i)
    if (s->assets[i]) AAsset_close(s->assets[i]);
  free(s->assets);
#endif
  free(s->modules);
  kiln_device_release(s->device);
  kiln_instance_release(s->instance);
  free(s);
}

/* Instance + device + room for `count` modules; NULL after throwing. */
static session* session_begin(JNIEnv* env, size_t count) {
  kiln_status_t st;
  session* s = (session*)calloc(1, sizeof(session));
  if (!s || !(s->modules = (kiln_module_t*)calloc(count ? count : 1, sizeof(kiln_module_t)))) {
    free(s);
    throw_state(env, "out of memory", NULL);
    return NULL;
  }
#ifdef __ANDROID__
  s->assets = (AAsset**)calloc(count ? count : 1, sizeof(AAsset*));
#endif
  if ((st = kiln_instance_create(&s->instance)) ||
      (st = kiln_device_create(s->instance, "vulkan", NULL, -1, &s->device))) {
    throw_state(env, "device", st);
    session_free(s);
    return NULL;
  }
  return s;
}

/* Links the loaded modules; returns the handle or 0 after throwing. */
static jlong session_end(JNIEnv* env, session* s) {
  kiln_status_t st = kiln_context_create(s->device, s->modules, s->module_count, &s->context);
  if (st) {
    throw_state(env, "context", st);
    session_free(s);
    return 0;
  }
  return (jlong)(intptr_t)s;
}

JNIEXPORT jlong JNICALL Java_dev_kiln_Kiln_nativeCreate(JNIEnv* env, jclass cls, jobjectArray buffers) {
  jsize n = (*env)->GetArrayLength(env, buffers), i;
  session* s = session_begin(env, (size_t)n);
  if (!s) return 0;
  for (i = 0; i < n; ++i) {
    jobject buf = (*env)->GetObjectArrayElement(env, buffers, i);
    void* data = buf ? (*env)->GetDirectBufferAddress(env, buf) : NULL;
    jlong size = buf ? (*env)->GetDirectBufferCapacity(env, buf) : -1;
    kiln_status_t st;
    if (!data || size <= 0) {
      throw_state(env, "module buffers must be non-empty direct ByteBuffers", NULL);
      session_free(s);
      return 0;
    }
    st = kiln_module_load_from_memory(s->instance, data, (size_t)size, &s->modules[s->module_count]);
    if (st) {
      throw_state(env, "module", st);
      session_free(s);
      return 0;
    }
    ++s->module_count;
    (*env)->DeleteLocalRef(env, buf);
  }
  return session_end(env, s);
}

#ifdef __ANDROID__
JNIEXPORT jlong JNICALL Java_dev_kiln_Kiln_nativeCreateFromAssets(JNIEnv* env, jclass cls, jobject asset_manager,
                                                                  jobjectArray names) {
  AAssetManager* am = AAssetManager_fromJava(env, asset_manager);
  jsize n = (*env)->GetArrayLength(env, names), i;
  session* s = am ? session_begin(env, (size_t)n) : NULL;
  if (!am) throw_state(env, "no AAssetManager", NULL);
  if (!s) return 0;
  for (i = 0; i < n; ++i) {
    jstring name = (jstring)(*env)->GetObjectArrayElement(env, names, i);
    const char* path = name ? (*env)->GetStringUTFChars(env, name, NULL) : NULL;
    AAsset* asset = path ? AAssetManager_open(am, path, AASSET_MODE_BUFFER) : NULL;
    const void* data = asset ? AAsset_getBuffer(asset) : NULL;
    kiln_status_t st = NULL;
    char what[256];
    snprintf(what, sizeof(what), "asset %s", path ? path : "(null)");
    if (path) (*env)->ReleaseStringUTFChars(env, name, path);
    if (!data) {
      if (asset) AAsset_close(asset);
      throw_state(env, asset ? "asset is compressed (add noCompress \"kiln\")" : "asset not found", NULL);
      session_free(s);
      return 0;
    }
    s->assets[s->module_count] = asset;
    st = kiln_module_load_from_memory(s->instance, data, (size_t)AAsset_getLength64(asset),
                                      &s->modules[s->module_count]);
    ++s->module_count; /* the asset is closed by session_free, loaded or not */
    if (st) {
      throw_state(env, what, st);
      session_free(s);
      return 0;
    }
  }
  return session_end(env, s);
}
#endif

JNIEXPORT void JNICALL Java_dev_kiln_Kiln_nativeClose(JNIEnv* env, jclass cls, jlong handle) {
  session_free((session*)(intptr_t)handle);
}

JNIEXPORT jstring JNICALL Java_dev_kiln_Kiln_nativeDeviceName(JNIEnv* env, jclass cls, jlong handle) {
  session* s = (session*)(intptr_t)handle;
  return (*env)->NewStringUTF(env, s ? kiln_device_name(s->device) : "");
}

/* Shape of argument (is_result 0) or result (1) `index` of `function`. */
JNIEXPORT jlongArray JNICALL Java_dev_kiln_Kiln_nativeShape(JNIEnv* env, jclass cls, jlong handle, jstring function,
                                                          jboolean is_result, jint index) {
  session* s = (session*)(intptr_t)handle;
  const char* name = (*env)->GetStringUTFChars(env, function, NULL);
  kiln_function_t fn = NULL;
  kiln_tensor_signature_t sig;
  kiln_status_t st = kiln_context_lookup_function(s->context, name, &fn);
  jlongArray out;
  jlong dims[KILN_MAX_RANK];
  size_t i;
  (*env)->ReleaseStringUTFChars(env, function, name);
  if (!st) st = is_result ? kiln_function_result(fn, (size_t)index, &sig) : kiln_function_arg(fn, (size_t)index, &sig);
  if (st) {
    throw_state(env, "signature", st);
    return NULL;
  }
  for (i = 0; i < sig.rank; ++i) dims[i] = (jlong)sig.dims[i];
  out = (*env)->NewLongArray(env, (jsize)sig.rank);
  if (out) (*env)->SetLongArrayRegion(env, out, 0, (jsize)sig.rank, dims);
  return out;
}

/* Runs `function` on f32 inputs; returns every result as float[]. */
JNIEXPORT jobjectArray JNICALL Java_dev_kiln_Kiln_nativeRun(JNIEnv* env, jclass cls, jlong handle, jstring function,
                                                           jobjectArray inputs) {
  session* s = (session*)(intptr_t)handle;
  const char* name = (*env)->GetStringUTFChars(env, function, NULL);
  kiln_function_t fn = NULL;
  kiln_status_t st = kiln_context_lookup_function(s->context, name, &fn);
  kiln_tensor_t args[16] = {0}, results[16] = {0};
  size_t nargs = 0, nres = 0, i, k;
  jobjectArray out = NULL;
  (*env)->ReleaseStringUTFChars(env, function, name);
  if (st) {
    throw_state(env, "function", st);
    return NULL;
  }
  nargs = kiln_function_arg_count(fn);
  nres = kiln_function_result_count(fn);
  if (nargs > 16 || nres > 16 || (jsize)nargs != (*env)->GetArrayLength(env, inputs)) {
    throw_state(env, "wrong number of inputs (or more than 16 arguments/results)", NULL);
    return NULL;
  }
  for (i = 0; i < nargs; ++i) {
    kiln_tensor_signature_t sig;
    jfloatArray a = (jfloatArray)(*env)->GetObjectArrayElement(env, inputs, (jsize)i);
    size_t count = 1;
    jfloat* data;
    if ((st = kiln_function_arg(fn, i, &sig))) {
      throw_state(env, "argument", st);
      goto done;
    }
    for (k = 0; k < sig.rank; ++k) count *= (size_t)sig.dims[k];
    if (sig.dtype != KILN_DTYPE_F32 || !a || (size_t)(*env)->GetArrayLength(env, a) != count) {
      throw_state(env, "inputs must be float[] of the argument's element count (f32 arguments only)", NULL);
      goto done;
    }
    data = (*env)->GetFloatArrayElements(env, a, NULL);
    st = kiln_tensor_create(s->device, KILN_DTYPE_F32, sig.rank, sig.dims, data, count * sizeof(float), &args[i]);
    (*env)->ReleaseFloatArrayElements(env, a, data, JNI_ABORT);
    (*env)->DeleteLocalRef(env, a);
    if (st) {
      throw_state(env, "input", st);
      goto done;
    }
  }
  if ((st = kiln_invoke(s->context, fn, args, nargs, results, nres))) {
    throw_state(env, "invoke", st);
    goto done;
  }
  out = (*env)->NewObjectArray(env, (jsize)nres, (*env)->FindClass(env, "[F"), NULL);
  for (i = 0; out && i < nres; ++i) {
    size_t bytes = kiln_tensor_byte_size(results[i]);
    jfloatArray r;
    jfloat* data;
    if (kiln_tensor_dtype(results[i]) != KILN_DTYPE_F32) {
      throw_state(env, "results must be f32", NULL);
      out = NULL;
      break;
    }
    r = (*env)->NewFloatArray(env, (jsize)(bytes / sizeof(float)));
    data = r ? (*env)->GetFloatArrayElements(env, r, NULL) : NULL;
    if (!data) {
      out = NULL;
      break;
    }
    st = kiln_tensor_read(results[i], data, bytes);
    (*env)->ReleaseFloatArrayElements(env, r, data, 0);
    if (st) {
      throw_state(env, "read", st);
      out = NULL;
      break;
    }
    (*env)->SetObjectArrayElement(env, out, (jsize)i, r);
    (*env)->DeleteLocalRef(env, r);
  }
done:
  for (i = 0; i < 16; ++i) {
    kiln_tensor_release(args[i]);
    kiln_tensor_release(results[i]);
  }
  return out;
}
