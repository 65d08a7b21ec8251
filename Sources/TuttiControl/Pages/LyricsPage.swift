/// The web lyric screen (`/lyrics?room=NAME&delay=MS`; it shows its room's zone, and follows
/// the room when it moves to another): large type on a dark background, the
/// current line centred with its words filling in, the lines around it dimmed and scrolling
/// smoothly, between the title and the progress bar and never under them (the lines fade
/// out before either; type is sized by the screen's smaller side, and a long line wraps, so
/// a phone held upright shows whole lines as a TV does). It locks its own clock to the coordinator's over the event stream and draws each
/// frame (requestAnimationFrame) for the moment that frame will be on the glass.
enum LyricsPage {
    static let html = #"""
<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tutti · lyrics</title>
<style>
  :root { --bg: #0b0d12; --fg: #f4f1ea; --dim: rgba(244,241,234,.32); --sung: #ffd34d; --accent: #7cc7ff; }
  html, body { margin: 0; height: 100%; background: var(--bg); color: var(--fg); overflow: hidden;
    font-family: "DejaVu Sans", "Noto Sans", "Helvetica Neue", Arial, sans-serif; }
  header { position: fixed; top: 0; left: 0; right: 0; padding: 2.2vh 4vw; display: flex; justify-content: space-between;
    align-items: baseline; gap: 1em; font-size: min(2.6vh, 4vw); z-index: 2; background: var(--bg);
    white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
  header > div:first-child { overflow: hidden; text-overflow: ellipsis; }
  #title { font-weight: 700; } #artist { color: var(--dim); margin-left: .6em; } #status { color: var(--accent); }
  /* Between the header and the footer: lines scroll and fade out inside it, never under either. */
  #stage { position: absolute; top: 9vh; bottom: 9vh; left: 0; right: 0; overflow: hidden;
    -webkit-mask-image: linear-gradient(transparent, #000 14%, #000 86%, transparent);
    mask-image: linear-gradient(transparent, #000 14%, #000 86%, transparent); }
  #lines { position: absolute; left: 0; right: 0; top: 50%; transition: transform .45s cubic-bezier(.2,.7,.2,1); will-change: transform; }
  /* Heights follow the text (a long line wraps); the scroll reads each line's own place. */
  .line { box-sizing: border-box; text-align: center; padding: 1.2vh 6vw; font-size: min(4.2vh, 6vw); line-height: 1.25;
    min-height: 9vh; display: flex; flex-wrap: wrap; align-items: center; justify-content: center; overflow-wrap: anywhere;
    color: var(--dim); transition: color .3s, opacity .3s; }
  .line.current { font-size: min(7vh, 8.5vw); font-weight: 700; color: var(--fg); }
  .line.far { opacity: .45; }
  .word { white-space: pre; }
  .line.current .word { background-repeat: no-repeat; -webkit-background-clip: text; background-clip: text; }
  .voice-F { font-style: italic; } .voice-D { text-decoration: underline; text-decoration-thickness: .06em; }
  #card { position: absolute; inset: 0; display: none; align-items: center; justify-content: center; flex-direction: column;
    font-size: 4vh; color: var(--dim); text-align: center; }
  #card b { color: var(--fg); font-size: 6vh; margin-bottom: 1vh; }
  #plain { position: absolute; inset: 12vh 8vw 10vh; display: none; overflow: hidden; text-align: center; font-size: min(3.6vh, 5vw);
    line-height: 1.5; color: var(--fg); white-space: pre-line; }
  footer { position: fixed; left: 4vw; right: 4vw; bottom: 3vh; display: flex; align-items: center; gap: 1.5vw;
    font-size: min(2.2vh, 3.6vw); color: var(--dim); z-index: 2; }
  #bar { flex: 1; height: .7vh; background: rgba(255,255,255,.12); border-radius: 1vh; overflow: hidden; }
  #fill { height: 100%; width: 0; background: var(--accent); }
</style></head>
<body>
<header><div><span id="title">tutti</span><span id="artist"></span></div><div id="status">connecting…</div></header>
<div id="stage"><div id="lines"></div></div>
<div id="card"><b id="cardTitle"></b><span>♪ No lyrics for this track ♪</span></div>
<div id="plain"></div>
<footer><span id="elapsed">0:00</span><div id="bar"><div id="fill"></div></div><span id="duration"></span></footer>
<script>
"use strict";
const params = new URLSearchParams(location.search);
const room = params.get("room");
const displayDelay = Number(params.get("delay") || 0);   // ms: this screen's own lag
const $ = id => document.getElementById(id);

// The house clock: coordinator time (ms) from exchanges over the event stream, taking the
// offset of the quickest recent exchange (its error is at most half its round trip).
const clock = { offset: null, samples: [], pending: new Map(), next: 1,
  now() { return this.offset === null ? null : performance.now() + this.offset; },
  ask(ws) { const id = this.next++; const t1 = performance.now(); this.pending.set(id, t1);
    ws.send(JSON.stringify({ type: "time", id, t1 })); },
  answer(m) { const t4 = performance.now(); if (!this.pending.has(m.id)) return; this.pending.delete(m.id);
    const t2 = m.t2 / 1e6, t3 = m.t3 / 1e6, rtt = (t4 - m.t1) - (t3 - t2);
    this.samples.push({ rtt, offset: ((t2 - m.t1) + (t3 - t4)) / 2 });
    if (this.samples.length > 24) this.samples.shift();
    this.offset = this.samples.reduce((a, b) => b.rtt < a.rtt ? b : a).offset; } };

let np = null, lyrics = null, rooms = [], built = null, shownLine = undefined, frameInterval = 16.7, lastFrame = null;
window.__lineLog = [];   // [coordinator ms it reaches the glass, line index, coordinator ms it was drawn]: for tests and benchmarks
window.__state = {};

function clockText(s) { s = Math.max(0, Math.floor(s)); return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }

// The zone this screen follows: its room's (the default zone's without a room, or until
// the room is known); when the room moves, the screen follows it to its new zone.
let zone = "default", socket = null;
function roomZone() {
  const r = room ? rooms.find(x => (x.name || "").toLowerCase() === room.toLowerCase() || (x.key || "").toLowerCase() === room.toLowerCase()) : null;
  return (r && r.zone) || "default";
}
function followRoom() {
  const wanted = roomZone();
  if (wanted !== zone && socket) { zone = wanted; socket.moved = true; socket.close(); }
}

function connect() {
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/events?zone=" + encodeURIComponent(zone));
  socket = ws;
  let timer = null, asked = 0;
  ws.onopen = () => { $("status").textContent = "…"; const tick = () => { clock.ask(ws); asked++;
    timer = setTimeout(tick, asked < 20 ? 50 : 1000); }; tick(); };
  ws.onmessage = e => { const m = JSON.parse(e.data);
    if (m.type === "time") return clock.answer(m);
    if (m.nowPlaying) np = m.nowPlaying;
    if (m.type === "hello" || m.type === "track-changed") { lyrics = m.lyrics || null; build(); }
    if (m.rooms) rooms = m.rooms;
    if (m.room) { rooms = rooms.filter(r => r.key !== m.room.key); rooms.push(m.room); }
    if (m.rooms || m.room) followRoom(); };
  ws.onclose = () => { clearTimeout(timer); if (ws !== socket) return;
    $("status").textContent = "reconnecting…"; setTimeout(connect, ws.moved ? 0 : 1000); };
}

function build() {
  const box = $("lines"); box.innerHTML = ""; built = null; shownLine = undefined;
  $("title").textContent = np ? (np.title || "tutti") : "tutti";
  $("artist").textContent = np && np.artist ? "— " + np.artist : "";
  const synced = lyrics && lyrics.lines && lyrics.lines.length;
  $("card").style.display = !synced && !(lyrics && lyrics.plain && lyrics.plain.length) ? "flex" : "none";
  $("cardTitle").textContent = np ? [np.title, np.artist].filter(Boolean).join(" — ") : "";
  $("plain").style.display = !synced && lyrics && lyrics.plain && lyrics.plain.length ? "block" : "none";
  $("plain").textContent = !synced && lyrics && lyrics.plain ? lyrics.plain.join("\n") : "";
  if (!synced) return;
  built = lyrics.lines.map((line, i) => {
    const div = document.createElement("div"); div.className = "line" + (line.voice ? " voice-" + line.voice : "");
    const words = line.words && line.words.length ? line.words.map(w => w.text) : (line.text ? line.text.split(" ") : []);
    const spans = words.map((w, k) => { const s = document.createElement("span"); s.className = "word";
      s.textContent = (k ? " " : "") + w; div.appendChild(s); return s; });
    if (!words.length) div.textContent = "♪";
    box.appendChild(div); return { div, spans };
  });
}

// Which line and word at media position t (ms): as LyricCursor does on the coordinator.
function cursor(t) {
  const lines = lyrics.lines; let lo = 0, hi = lines.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (lines[mid].time <= t) lo = mid + 1; else hi = mid; }
  const i = lo - 1; if (i < 0) return { line: -1 };
  const line = lines[i];
  const end = i + 1 < lines.length ? lines[i + 1].time
    : (line.words && line.words.length ? (line.words[line.words.length - 1].end || line.words[line.words.length - 1].time + 1000) : line.time + 5000);
  const lineProgress = end > line.time ? Math.min(1, Math.max(0, (t - line.time) / (end - line.time))) : 1;
  if (line.words && line.words.length) {
    let w = -1; line.words.forEach((x, k) => { if (x.time <= t) w = k; });
    if (w < 0) return { line: i, word: -1, wordProgress: 0 };
    const x = line.words[w], wEnd = x.end || (w + 1 < line.words.length ? line.words[w + 1].time : end);
    return { line: i, word: w, wordProgress: wEnd > x.time ? Math.min(1, Math.max(0, (t - x.time) / (wEnd - x.time))) : 1 };
  }
  const words = line.text ? line.text.split(" ") : [];
  const total = words.reduce((a, w) => a + w.length + 1, 0); let passed = lineProgress * total;
  for (let k = 0; k < words.length; k++) { const len = words[k].length + 1;
    if (passed < len || k === words.length - 1) return { line: i, word: k, wordProgress: Math.min(1, passed / len) }; passed -= len; }
  return { line: i, word: -1, wordProgress: 0 };
}

// A new size (a screen turned, a window resized): the lines move to their new places.
addEventListener("resize", () => { shownLine = undefined; });

function frame(stamp) {
  if (lastFrame !== null) { const d = stamp - lastFrame; if (d > 4 && d < 50) frameInterval += (d - frameInterval) * 0.1; }
  lastFrame = stamp;
  requestAnimationFrame(frame);
  const now = clock.now();
  if (!np) return;
  // This frame reaches the glass about one frame from now and stays there one frame: draw it
  // for the middle of that, so that a line appears on the frame nearest to its time (within
  // half a frame, early or late).
  const glass = now === null ? null : now + frameInterval;
  const shown = glass === null ? null : glass + frameInterval / 2 + displayDelay;
  let t = np.elapsed * 1000;
  const moving = np.state === "playing" || np.state === "loading";
  if (moving && np.trackOrigin != null && shown !== null) {
    const heard = shown - np.trackOrigin / 1e6;
    t = np.state === "loading" ? Math.max(t, heard) : heard;
  }
  const r = room ? rooms.find(x => (x.name || "").toLowerCase() === room.toLowerCase() || (x.key || "").toLowerCase() === room.toLowerCase()) : null;
  $("status").textContent = ({ playing: "▶", paused: "⏸ paused", stopped: "■ stopped", loading: "…", buffering: "… buffering", failed: "✕ failed" })[np.state]
    + (room ? " " + (r ? r.name : room) : "") + (r && r.report && r.report.interrupted ? " (interrupted)" : "")
    + (clock.offset === null ? " (clock…)" : "");
  $("elapsed").textContent = clockText(t / 1000);
  $("duration").textContent = np.duration ? clockText(np.duration) : "";
  $("fill").style.width = np.duration ? Math.min(100, Math.max(0, t / 10 / np.duration)) + "%" : "0";
  if (!built) return;
  const c = cursor(t);
  if (c.line !== shownLine) {
    if (shownLine !== undefined && glass !== null) window.__lineLog.push([glass, c.line, now]);
    shownLine = c.line;
    built.forEach((b, i) => { b.div.classList.toggle("current", i === c.line);
      b.div.classList.toggle("far", Math.abs(i - c.line) > 2);
      b.spans.forEach(s => { s.style.backgroundImage = ""; s.style.color = ""; }); });
    // The current line's middle at the stage's: read from its own place and height (the
    // class just changed its size; reading them lays it out now).
    const centre = built[Math.max(c.line, 0)].div;
    $("lines").style.transform = "translateY(" + (-(centre.offsetTop + centre.offsetHeight / 2)) + "px)";
  }
  window.__state = { line: c.line, text: c.line >= 0 ? lyrics.lines[c.line].text : null, word: c.word, position: t };
  if (c.line >= 0) {
    built[c.line].spans.forEach((s, k) => {
      const p = k < c.word ? 100 : k === c.word ? c.wordProgress * 100 : 0;
      s.style.color = "transparent";
      s.style.backgroundImage = "linear-gradient(90deg, var(--sung) " + p + "%, var(--fg) " + p + "%)";
    });
  }
}
connect();
requestAnimationFrame(frame);
</script>
</body></html>
"""#
}
