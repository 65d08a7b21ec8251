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

let np = null, lyrics = null, rooms = [], built = null, shownLine = undefined, frameInterval = 16.7, lastFrame = null, lastGlass = null;
// [coordinator ms it reaches the glass, line index, coordinator ms it was drawn, the previous
// frame's glass ms]: for tests and benchmarks (the last tells a late decision from a late frame)
window.__lineLog = [];
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
  const glassBefore = lastGlass; lastGlass = glass;
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
    if (shownLine !== undefined && glass !== null) window.__lineLog.push([glass, c.line, now, glassBefore]);
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
