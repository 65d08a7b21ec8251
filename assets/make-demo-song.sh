#!/usr/bin/env bash
# Builds the demo song "Tutti" (CC0) from scratch: a synthesized backing track (sox),
# spoken/sung words (espeak-ng), mixed and encoded as 48 kHz stereo MP3 (lame), plus
# its word-timed LRC file. Deterministic: run it again to get the same song.
set -euo pipefail
cd "$(dirname "$0")"
out=demo
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
R=48000

# One bar at 120 bpm (2 s): kick on every beat, noise hat on the off-beats.
sox -n -r $R -c 1 "$work/kick.wav" synth 0.18 sine 120-40 fade 0 0.18 0.15 gain -3
sox -n -r $R -c 1 "$work/hat.wav" synth 0.05 whitenoise fade 0 0.05 0.04 highpass 6000 gain -14
sox -n -r $R -c 1 "$work/rest.wav" trim 0 0.07
sox "$work/kick.wav" "$work/rest.wav" "$work/hat.wav" -r $R "$work/beat1.wav" pad 0 0.2
sox "$work/beat1.wav" "$work/beat.wav" trim 0 0.5
sox "$work/beat.wav" "$work/beat.wav" "$work/beat.wav" "$work/beat.wav" "$work/bar.wav"

# Four chords of two bars each (C, A minor, F, G), a soft pad with slow tremolo.
chord() { sox -n -r $R -c 1 "$work/$1.wav" synth 4 sine "$2" sine "$3" sine "$4" tremolo 0.5 30 fade 0.05 4 0.3 gain -16; }
chord c1 C3 E3 G3
chord c2 A2 C3 E3
chord c3 F2 A2 C3
chord c4 G2 B2 D3
sox "$work/c1.wav" "$work/c2.wav" "$work/c3.wav" "$work/c4.wav" "$work/chords8.wav"
sox "$work/chords8.wav" "$work/chords8.wav" "$work/chords.wav"
sox "$work/bar.wav" "$work/bar.wav" "$work/bar.wav" "$work/bar.wav" "$work/bar.wav" "$work/bar.wav" "$work/bar.wav" "$work/bar.wav" "$work/bars.wav"
sox "$work/bars.wav" "$work/bars.wav" "$work/drums.wav"
sox -m "$work/chords.wav" "$work/drums.wav" "$work/backing.wav"

# The words: each line starts at a known time (seconds); each word is spoken on its own
# and laid end to end, so that every word's start is known exactly for the LRC file.
lines=(
  "2.0|Every room is singing now"
  "6.0|Kitchen, hall and study too"
  "10.0|One clock ticking through the house"
  "14.0|Every speaker right on cue"
  "18.0|Tutti, all together"
  "22.0|Tutti, all in time"
  "26.0|Every room is singing now"
)
stamp() { awk -v t="$1" 'BEGIN { m = int(t / 60); s = t - m * 60; printf "%02d:%05.2f", m, s }'; }
lrc="$out/tutti-demo.lrc"
{
  echo "[ti:Tutti]"
  echo "[ar:The tutti band]"
  echo "[al:tutti demo]"
  echo "[by:assets/make-demo-song.sh]"
  echo "[length:00:32]"
} > "$lrc"
mixins=()
i=0
for entry in "${lines[@]}"; do
  at=${entry%%|*}; text=${entry#*|}
  t=$at
  line="[$(stamp "$t")]"
  parts=()
  j=0
  for word in $text; do
    espeak-ng -v en-us+f3 -s 150 -p 60 -w "$work/w$i-$j.raw.wav" "$word"
    sox "$work/w$i-$j.raw.wav" -r $R -c 1 "$work/w$i-$j.wav" silence 1 0.01 0.5% reverse silence 1 0.01 0.5% reverse pad 0 0.06
    d=$(soxi -D "$work/w$i-$j.wav")
    line+="<$(stamp "$t")>$word "
    t=$(awk -v a="$t" -v b="$d" 'BEGIN { printf "%.3f", a + b }')
    parts+=("$work/w$i-$j.wav")
    j=$((j+1))
  done
  line="${line% }<$(stamp "$t")>"
  echo "$line" >> "$lrc"
  sox "${parts[@]}" "$work/v$i.wav" gain -2 pad "$at" 0
  mixins+=("$work/v$i.wav")
  i=$((i+1))
done
echo "[00:30.00]" >> "$lrc"
sox -m "${mixins[@]}" "$work/voice.wav"
sox -m -v 1 "$work/backing.wav" -v 1 "$work/voice.wav" -c 2 "$work/mix.wav" remix 1 1 trim 0 32 fade 0 32 1.5 norm -1
lame --quiet -r -s 48 --bitwidth 16 --little-endian -m j -b 128 --tt "Tutti" --ta "The tutti band" --tl "tutti demo" --ty 2026 --tc "CC0" \
  <(sox "$work/mix.wav" -t raw -r $R -e signed -b 16 -c 2 -) "$out/tutti-demo.mp3" 2>/dev/null \
  || { sox "$work/mix.wav" -t raw -r $R -e signed -b 16 -c 2 "$work/mix.raw"; lame --quiet -r -s 48 --bitwidth 16 --little-endian -m j -b 128 --tt "Tutti" --ta "The tutti band" --tl "tutti demo" "$work/mix.raw" "$out/tutti-demo.mp3"; }
echo "wrote $out/tutti-demo.mp3 and $lrc"
