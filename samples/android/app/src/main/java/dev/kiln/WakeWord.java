package dev.kiln;

import java.util.ArrayList;
import java.util.List;

/**
 * openWakeWord's streaming pipeline over three Kiln modules linked in one
 * {@link Kiln} session: "mel.main" (melspectrogram.onnx, [1,1760]),
 * "emb.main" (embedding_model.onnx, [1,76,32,1]) and "head.main" (a head,
 * e.g. alexa_v0.1.onnx, [1,L,96]); compiled with
 * {@code kiln-compile --module-name=mel|emb|head}. The same definition as
 * samples/wakeword/wakeword.c (and scripts/wakeword_reference.mjs --mode oww):
 * chunk c (1280 new 16 kHz samples) feeds samples [1280c-480, 1280c+1280)
 * (zeros before 0) to mel; each mel value v becomes v/10+2; an embedding is
 * computed for every 76-frame window ending at frame 76, 84, 92, ...; once
 * L embeddings exist, each new one runs the head on the last L. The score is
 * the head's output (for a multi-class softmax head, the max over classes 1..).
 */
public final class WakeWord {
  public static final int CHUNK = 1280, CONTEXT = 480, MEL_BINS = 32, EMB_WINDOW = 76, EMB_STEP = 8, EMB_DIM = 96;

  /** One head score: the window ends at mel frame {@code frame}. */
  public static final class Score {
    public final int frame;
    public final float score;

    Score(int frame, float score) {
      this.frame = frame;
      this.score = score;
    }
  }

  /** Scores of a clip, with wall times of the invocations (ms). */
  public static final class Result {
    public final List<Score> scores = new ArrayList<>();
    public double melMs, embMs, headMs;
    public int invocations;

    public Score max() {
      Score best = null;
      for (Score s : scores) if (best == null || s.score > best.score) best = s;
      return best;
    }
  }

  private final Kiln kiln;
  private final int window; // L, from head.main's [1,L,96] argument

  public WakeWord(Kiln kiln) {
    this.kiln = kiln;
    long[] head = kiln.argShape("head.main", 0);
    if (head.length != 3 || head[2] != EMB_DIM) throw new IllegalArgumentException("head.main must take [1,L,96]");
    this.window = (int) head[1];
  }

  /** Runs the pipeline on 16 kHz mono samples (int16 values); a trailing partial chunk is dropped. */
  public Result process(short[] pcm) {
    Result r = new Result();
    int chunks = pcm.length / CHUNK;
    float[] frames = new float[(chunks * 8 + 1) * MEL_BINS];
    float[] embs = new float[(chunks + 1) * EMB_DIM];
    int frameCount = 0, embCount = 0, nextEnd = EMB_WINDOW;
    float[] melIn = new float[CHUNK + CONTEXT];
    for (int c = 0; c < chunks; ++c) {
      for (int i = 0; i < melIn.length; ++i) {
        int k = c * CHUNK - CONTEXT + i;
        melIn[i] = k >= 0 ? pcm[k] : 0f;
      }
      long t0 = System.nanoTime();
      float[] mel = kiln.run("mel.main", melIn)[0];
      r.melMs += (System.nanoTime() - t0) / 1e6;
      ++r.invocations;
      if (frames.length < (frameCount * MEL_BINS + mel.length)) frames = java.util.Arrays.copyOf(frames, 2 * frames.length + mel.length);
      for (int i = 0; i < mel.length; ++i) frames[frameCount * MEL_BINS + i] = (float) (mel[i] / 10.0 + 2.0);
      frameCount += mel.length / MEL_BINS;
      while (nextEnd <= frameCount) {
        float[] embIn = java.util.Arrays.copyOfRange(frames, (nextEnd - EMB_WINDOW) * MEL_BINS, nextEnd * MEL_BINS);
        t0 = System.nanoTime();
        float[] emb = kiln.run("emb.main", embIn)[0];
        r.embMs += (System.nanoTime() - t0) / 1e6;
        ++r.invocations;
        if (embs.length < (embCount + 1) * EMB_DIM) embs = java.util.Arrays.copyOf(embs, 2 * embs.length);
        System.arraycopy(emb, 0, embs, embCount * EMB_DIM, EMB_DIM);
        ++embCount;
        if (embCount >= window) {
          float[] headIn = java.util.Arrays.copyOfRange(embs, (embCount - window) * EMB_DIM, embCount * EMB_DIM);
          t0 = System.nanoTime();
          float[] out = kiln.run("head.main", headIn)[0];
          r.headMs += (System.nanoTime() - t0) / 1e6;
          ++r.invocations;
          float v = out[0];
          if (out.length > 1) {
            v = out[1];
            for (int i = 2; i < out.length; ++i) v = Math.max(v, out[i]);
          }
          r.scores.add(new Score(nextEnd, v));
        }
        nextEnd += EMB_STEP;
      }
    }
    return r;
  }

  /** Samples of a RIFF WAV file: PCM 16-bit, mono, 16 kHz (anything else is rejected). */
  public static short[] readWav(byte[] b) {
    java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    if (b.length < 12 || buf.getInt(0) != 0x46464952 || buf.getInt(8) != 0x45564157)
      throw new IllegalArgumentException("not a RIFF/WAVE file");
    int pos = 12;
    boolean fmtOk = false;
    while (pos + 8 <= b.length) {
      int id = buf.getInt(pos), size = buf.getInt(pos + 4);
      if (id == 0x20746d66) { // "fmt "
        fmtOk = buf.getShort(pos + 8) == 1 && buf.getShort(pos + 10) == 1 && buf.getInt(pos + 12) == 16000
            && buf.getShort(pos + 22) == 16;
      } else if (id == 0x61746164) { // "data"
        if (!fmtOk) throw new IllegalArgumentException("want PCM 16-bit mono 16 kHz");
        int n = Math.min(size, b.length - pos - 8) / 2;
        short[] pcm = new short[n];
        for (int i = 0; i < n; ++i) pcm[i] = buf.getShort(pos + 8 + 2 * i);
        return pcm;
      }
      pos += 8 + size + (size & 1);
    }
    throw new IllegalArgumentException("no data chunk");
  }
}
