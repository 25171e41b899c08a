package dev.kiln.sample;

import android.app.Activity;
import android.os.Bundle;
import android.util.Log;
import android.widget.TextView;
import dev.kiln.Kiln;
import dev.kiln.WakeWord;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;

/**
 * Runs openWakeWord (mel -> embedding -> "alexa" head, three Kiln modules
 * from the APK's assets) on the bundled alexa.wav, on a background thread,
 * and shows the device name, the best score and the timings; the same text
 * goes to logcat (tag "Kiln").
 */
public class MainActivity extends Activity {
  private static final String TAG = "Kiln";

  @Override
  protected void onCreate(Bundle state) {
    super.onCreate(state);
    TextView view = new TextView(this);
    view.setPadding(32, 32, 32, 32);
    view.setText("Running the wake-word pipeline…");
    setContentView(view);
    new Thread(() -> {
      String text = run();
      Log.i(TAG, text);
      runOnUiThread(() -> view.setText(text));
    }).start();
  }

  private String run() {
    long t0 = System.nanoTime();
    try (Kiln kiln = Kiln.fromAssets(getAssets(), "mel.kiln", "emb.kiln", "alexa.kiln")) {
      double loadMs = (System.nanoTime() - t0) / 1e6;
      short[] pcm = WakeWord.readWav(readAsset("alexa.wav"));
      long t1 = System.nanoTime();
      WakeWord.Result r = new WakeWord(kiln).process(pcm);
      double totalMs = (System.nanoTime() - t1) / 1e6;
      WakeWord.Score best = r.max();
      return String.format(Locale.ROOT,
          "device: %s\nalexa.wav: %.2f s of audio\nmax score %.6f at frame %d (%s)\n"
              + "load + link: %.1f ms\npipeline: %.1f ms (mel %.1f, embedding %.1f, head %.1f; %d invocations)",
          kiln.deviceName(), pcm.length / 16000.0, best.score, best.frame,
          best.score > 0.5 ? "wake word detected" : "no wake word", loadMs, totalMs, r.melMs, r.embMs, r.headMs,
          r.invocations);
    } catch (RuntimeException | IOException e) {
      Log.e(TAG, "failed", e);
      return "error: " + e.getMessage();
    }
  }

  private byte[] readAsset(String name) throws IOException {
    try (InputStream in = getAssets().open(name)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buf = new byte[1 << 16];
      for (int n; (n = in.read(buf)) > 0; ) out.write(buf, 0, n);
      return out.toByteArray();
    }
  }
}
