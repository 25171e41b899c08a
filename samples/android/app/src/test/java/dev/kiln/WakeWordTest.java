package dev.kiln;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;

/**
 * The Android sample's Java class and JNI layer on the host JVM, on the
 * Vulkan device (lavapipe in CI): the wake-word pipeline on
 * tests/golden/wakeword/alexa.wav must give the frames and scores of
 * tests/golden/wakeword/expected.txt (onnxruntime-node's, via
 * scripts/wakeword_reference.mjs --mode oww) within 1e-4.
 *
 * <p>System properties: kiln.modules (a directory with mel.kiln, emb.kiln,
 * alexa.kiln compiled with --module-name=mel/emb/head) and kiln.golden
 * (tests/golden/wakeword).
 */
public class WakeWordTest {
  private static ByteBuffer direct(Path p) throws IOException {
    byte[] b = Files.readAllBytes(p);
    ByteBuffer buf = ByteBuffer.allocateDirect(b.length);
    buf.put(b).flip();
    return buf;
  }

  private static Kiln open() throws IOException {
    Path dir = Paths.get(System.getProperty("kiln.modules"));
    return Kiln.fromBuffers(direct(dir.resolve("mel.kiln")), direct(dir.resolve("emb.kiln")),
        direct(dir.resolve("alexa.kiln")));
  }

  @Test
  public void scoresMatchOnnxRuntime() throws IOException {
    Path golden = Paths.get(System.getProperty("kiln.golden"));
    List<int[]> frames = new ArrayList<>();
    List<Float> want = new ArrayList<>();
    for (String line : Files.readAllLines(golden.resolve("expected.txt"))) {
      if (line.isEmpty() || line.startsWith("#")) continue;
      String[] f = line.trim().split("\\s+");
      frames.add(new int[] {Integer.parseInt(f[1])});
      want.add(Float.parseFloat(f[3]));
    }
    assertTrue("expected.txt has scores", want.size() > 10);
    try (Kiln kiln = open()) {
      assertTrue(kiln.deviceName(), !kiln.deviceName().isEmpty());
      WakeWord.Result r = new WakeWord(kiln).process(WakeWord.readWav(Files.readAllBytes(golden.resolve("alexa.wav"))));
      assertEquals(want.size(), r.scores.size());
      for (int i = 0; i < want.size(); ++i) {
        assertEquals("frame of score " + i, frames.get(i)[0], r.scores.get(i).frame);
        assertEquals("score at frame " + frames.get(i)[0], want.get(i), r.scores.get(i).score, 1e-4);
      }
      System.out.printf("device %s: max score %.6f at frame %d; mel %.1f ms, emb %.1f ms, head %.1f ms (%d invocations)%n",
          kiln.deviceName(), r.max().score, r.max().frame, r.melMs, r.embMs, r.headMs, r.invocations);
    }
  }

  @Test
  public void shapesAndErrorsCrossJni() throws IOException {
    try (Kiln kiln = open()) {
      assertEquals(2, kiln.argShape("mel.main", 0).length);
      assertEquals(1760, kiln.argShape("mel.main", 0)[1]);
      assertEquals(16, kiln.argShape("head.main", 0)[1]);
      try {
        kiln.run("mel.main", new float[10]);
        fail("a wrong input length must throw");
      } catch (IllegalStateException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("element count"));
      }
      try {
        kiln.run("nope.main", new float[1]);
        fail("an unknown function must throw");
      } catch (IllegalStateException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("NOT_FOUND"));
      }
    }
    try {
      Kiln.fromBuffers(ByteBuffer.allocateDirect(64));
      fail("a malformed module must throw");
    } catch (IllegalStateException e) {
      assertTrue(e.getMessage(), e.getMessage().startsWith("module: DATA_LOSS"));
    }
  }
}
