#!/usr/bin/env bash
# Synthesizes speech as a 16 kHz mono 16-bit PCM WAV (the wake word pipeline's input).
#
#   scripts/make_speech.sh OUT.wav "text" [LEAD_S] [TAIL_S]
#
# LEAD_S / TAIL_S: seconds of digital silence added before/after (default 3.5 / 1).
# The reference pipeline (wakeword_reference.mjs) needs 196 mel frames = 40 chunks
# = 3.2 s before its first score, so the lead-in keeps the speech inside scored time.
# Env: KILN_ESPEAK_VOICE (default en-us), KILN_ESPEAK_SPEED (words/min, default 150).
# sox runs with -D (no dither), so the output is byte-for-byte reproducible with a
# given espeak-ng/sox version.
set -euo pipefail
out="${1:?usage: make_speech.sh OUT.wav \"text\" [LEAD_S] [TAIL_S]}"
text="${2:?usage: make_speech.sh OUT.wav \"text\" [LEAD_S] [TAIL_S]}"
lead="${3:-3.5}"
tail="${4:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
espeak-ng -v "${KILN_ESPEAK_VOICE:-en-us}" -s "${KILN_ESPEAK_SPEED:-150}" -w "$tmp/raw.wav" "$text"
sox -D "$tmp/raw.wav" -r 16000 -c 1 -b 16 -e signed-integer "$out" pad "$lead" "$tail"
echo "make_speech: $out ($(soxi -D "$out") s, $(soxi -r "$out") Hz, $(soxi -b "$out")-bit, $(soxi -c "$out") ch)"
