package dev.kiln;

import java.nio.ByteBuffer;

/**
 * A Kiln program on the Vulkan GPU: compiled modules (.kiln) linked in one
 * context on one device, through the thin JNI layer kiln_jni.c over the C
 * API (include/kiln/kiln.h). Not thread-safe; close() releases everything.
 *
 * <p>Tensors are f32: {@link #run} takes one flat float[] per argument, in
 * C order, of the argument's element count (its shape comes from the
 * function's signature, {@link #argShape}), and returns every result as a
 * flat float[]. Errors throw IllegalStateException with the runtime's
 * status message.
 */
public final class Kiln implements AutoCloseable {
  static {
    System.loadLibrary("kiln_jni");
  }

  private long handle;
  private final Object keepAlive; // module bytes the runtime reads zero-copy

  private Kiln(long handle, Object keepAlive) {
    this.handle = handle;
    this.keepAlive = keepAlive;
  }

  /**
   * Loads modules from direct ByteBuffers (read zero-copy: the buffers are
   * kept referenced until close()), linked in this order (imports resolve
   * against earlier modules). Throws IllegalStateException if there is no
   * Vulkan device or a module is malformed.
   */
  public static Kiln fromBuffers(ByteBuffer... modules) {
    for (ByteBuffer b : modules) {
      if (!b.isDirect()) throw new IllegalArgumentException("module buffers must be direct");
    }
    ByteBuffer[] copy = modules.clone();
    return new Kiln(nativeCreate(copy), copy);
  }

  /**
   * Android: loads modules from APK assets (stored uncompressed), read
   * zero-copy through AAssetManager / AAsset_getBuffer. The argument is an
   * android.content.res.AssetManager (typed Object so this class also
   * compiles for the host JVM).
   */
  public static Kiln fromAssets(Object assetManager, String... assetNames) {
    return new Kiln(nativeCreateFromAssets(assetManager, assetNames), null);
  }

  /** The Vulkan device's name, e.g. "Mali-G710" or "llvmpipe (LLVM 15.0.6, 256 bits)". */
  public String deviceName() {
    return nativeDeviceName(check());
  }

  /** Shape of argument {@code index} of {@code function} ("main" or "module.main"). */
  public long[] argShape(String function, int index) {
    return nativeShape(check(), function, false, index);
  }

  /** Shape of result {@code index} of {@code function}. */
  public long[] resultShape(String function, int index) {
    return nativeShape(check(), function, true, index);
  }

  /** Invokes {@code function} synchronously on f32 inputs; returns its results. */
  public float[][] run(String function, float[]... inputs) {
    return nativeRun(check(), function, inputs);
  }

  @Override
  public void close() {
    if (handle != 0) nativeClose(handle);
    handle = 0;
  }

  private long check() {
    if (handle == 0) throw new IllegalStateException("Kiln session is closed");
    return handle;
  }

  private static native long nativeCreate(ByteBuffer[] modules);

  private static native long nativeCreateFromAssets(Object assetManager, String[] names);

  private static native void nativeClose(long handle);

  private static native String nativeDeviceName(long handle);

  private static native long[] nativeShape(long handle, String function, boolean result, int index);

  private static native float[][] nativeRun(long handle, String function, float[][] inputs);
}
