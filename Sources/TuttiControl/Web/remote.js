"use strict";
const $ = id => document.getElementById(id);
// Icons drawn here, so that no font or outside file is needed.
const icons = { play: "M8 5v14l11-7z", pause: "M6 5h4v14H6zM14 5h4v14h-4z", next: "M5 6l8.5 6L5 18zM15 6h2.5v12H15z",
  previous: "M6.5 6H9v12H6.5zM10 12l8.5-6v12z", bookmark: "M6 3h12v18l-6-4-6 4z",
  like: "M12 21l-1.4-1.3C5.4 15 2 12 2 8.4 2 5.4 4.4 3 7.4 3c1.7 0 3.4.8 4.6 2.1C13.2 3.8 14.9 3 16.6 3 19.6 3 22 5.4 22 8.4c0 3.6-3.4 6.6-8.6 11.3z",
  sound: "M3 9v6h4l5 5V4L7 9H3zm13.5 3a4.5 4.5 0 0 0-2.5-4v8a4.5 4.5 0 0 0 2.5-4z",
  muted: "M3 9v6h4l5 5V4L7 9H3zm13.6 3l2.9-2.9-1.4-1.4-2.9 2.9-2.9-2.9-1.4 1.4 2.9 2.9-2.9 2.9 1.4 1.4 2.9-2.9 2.9 2.9 1.4-1.4z" };
const icon = name => '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="' + icons[name] + '"/></svg>';
["previous", "next", "like", "bookmark"].forEach(id => { $(id).innerHTML = icon(id); });
$("toggle").innerHTML = icon("play");
let token = localStorage.getItem("tutti-token") || "";
// The token from the address (`tutti ctl remote` prints it as /#token=...): kept, and taken
// out of the address bar. Opened in a tab already on the remote, it is only a new fragment.
function takeToken() {
  const given = new URLSearchParams(location.hash.slice(1)).get("token");
  if (!given) return false;
  token = given; localStorage.setItem("tutti-token", given);
  history.replaceState(null, "", location.pathname + location.search);
  $("tokenBox").style.display = "none"; say("");
  return true;
}

let np = null, queue = null, rooms = [], zones = [], dragging = false, offset = null, socket = null;
// The zone this page steers (its id), remembered.
let zone = localStorage.getItem("tutti-zone") || "default";
// What a zone plays is under /zones/{zone}/ (the default zone's at today's paths).
const perZone = ["/transport/", "/queue", "/loop", "/volume", "/feedback"];
const zoned = path => zone === "default" || !perZone.some(p => path.startsWith(p)) ? path : "/zones/" + encodeURIComponent(zone) + path;

function clockText(s) { s = Math.max(0, Math.floor(s || 0)); return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }
// A message in the dock: good news goes after a few seconds; a lost connection when it is back.
let sayTimer = null;
const unreachable = "cannot reach the coordinator";
function say(text, good) {
  clearTimeout(sayTimer);
  $("message").textContent = text || ""; $("message").style.color = good ? "var(--accent)" : "";
  if (text && good) sayTimer = setTimeout(() => say(""), 4000);
}

takeToken();
window.addEventListener("hashchange", () => { if (takeToken() && socket) { socket.steered = true; socket.close(); } });

async function call(method, path, body) {
  if (!token) { $("tokenBox").style.display = "flex"; say("this needs the house token"); return null; }
  try {
    const r = await fetch("/api/v1" + zoned(path), { method, headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
      body: body === undefined ? (method === "GET" ? undefined : "") : JSON.stringify(body) });
    const data = await r.json().catch(() => null);
    if (!r.ok) { say(data && data.error ? data.error : "error " + r.status); if (r.status === 401 || r.status === 403) $("tokenBox").style.display = "flex"; return null; }
    say(""); if (data && data.state) { np = data; render(); } return data;
  } catch (e) { say(unreachable); return null; }
}

$("toggle").onclick = () => call("POST", "/transport/toggle");
$("previous").onclick = () => call("POST", "/transport/previous");
$("next").onclick = () => call("POST", "/transport/next");
$("like").onclick = () => call("POST", "/feedback", { kind: "like" });
$("bookmark").onclick = () => call("POST", "/feedback", { kind: "bookmark" });
$("loop").onchange = e => call("PUT", "/loop", { mode: e.target.value });
$("replaygain").onchange = e => call("PUT", "/replaygain", { mode: e.target.value });
$("pair").onclick = async () => {
  const shown = await call("POST", "/pairing");
  if (shown) $("pairCode").textContent = shown.code + " — on the new machine: tutti pair " + shown.code + " --server " + location.origin + " (" + Math.round(shown.expiresInSeconds / 60) + " min, one machine)";
};
$("zone").onchange = e => steer(e.target.value);
$("addZone").onclick = async () => {
  const name = prompt("The new zone's name"); if (!name) return;
  const made = await call("POST", "/zones", { name }); if (made) steer(made.id);
};
$("party").onclick = () => call("POST", "/zones/party", { zone });
$("renameZone").onclick = async () => {
  const current = zones.find(z => z.id === zone); const name = prompt("The zone's new name", current ? current.name : ""); if (!name) return;
  if (await call("PUT", "/zones/" + encodeURIComponent(zone), { name })) loadZones();
};
$("removeZone").onclick = async () => { if (zone !== "default" && confirm("Remove this zone? Its rooms go to the default zone.")) { if (await call("DELETE", "/zones/" + encodeURIComponent(zone)) !== null) steer("default"); } };
$("saveToken").onclick = () => { token = $("token").value.trim(); localStorage.setItem("tutti-token", token); $("tokenBox").style.display = "none"; say("");
  if (socket) { socket.steered = true; socket.close(); } };
$("token").onkeydown = e => { if (e.key === "Enter") $("saveToken").click(); };
$("progress").oninput = () => { dragging = true; if (np && np.duration) $("elapsed").textContent = clockText($("progress").value / 1000 * np.duration); };
$("progress").onchange = () => { dragging = false; if (np && np.duration) call("POST", "/transport/seek", { position: $("progress").value / 1000 * np.duration }); };

function elapsedNow() {
  if (!np) return 0;
  if (np.rate > 0 && np.trackOrigin != null && offset !== null) return Math.max(np.elapsed, (performance.now() + offset - np.trackOrigin / 1e6) / 1000);
  return np.elapsed;
}

function render() {
  if (!np) return;
  $("title").textContent = np.title || "nothing queued";
  $("artist").textContent = np.artist || ""; $("album").textContent = np.album || "";
  $("art").style.backgroundImage = np.artworkURL ? "url(" + np.artworkURL + ")" : "";
  const playing = np.state === "playing" || np.state === "loading" || np.state === "buffering";
  $("toggle").innerHTML = icon(playing ? "pause" : "play"); $("toggle").dataset.state = playing ? "playing" : "idle";
  $("miniToggle").innerHTML = icon(playing ? "pause" : "play");
  $("miniTitle").textContent = np.title || "nothing queued"; $("miniArtist").textContent = np.artist || "";
  $("miniArt").style.backgroundImage = np.artworkURL ? "url(" + np.artworkURL + ")" : "";
  $("mini").classList.toggle("on", document.querySelector("#view-now.on") === null);
  $("state").textContent = np.state + (np.queueIndex != null ? " · " + (np.queueIndex + 1) + " of " + np.queueCount : "");
  $("duration").textContent = clockText(np.duration);
  $("loop").value = np.loopMode;
  if (np.replayGain) $("replaygain").value = np.replayGain.mode;
  $("like").style.color = np.rating === "like" ? "var(--warn)" : "";
  $("lyric").textContent = np.lyricLine || "";
  // A live input (a pipe, AirPlay, Spotify) is heard this long after it arrives: the house
  // makes it longer when the rooms' network holds their packets.
  const liveInput = /^(pcm:|airplay(:|$)|librespot(:|$))/.test(np.path || "");
  $("station").textContent = np.station ? "📻 " + np.station + (np.isLiveStream ? " · live" : "")
    : np.isLiveStream ? "live stream"
    : liveInput && np.latencyMilliseconds != null ? "live input · heard " + Math.round(np.latencyMilliseconds) + " ms after it arrives" : "";
  const b = np.buffer;
  $("bufferRow").style.display = b ? "block" : "none";
  if (b) {
    $("bufferFill").style.width = Math.round((b.loaded != null ? b.loaded : Math.min(1, b.seconds / 10)) * 100) + "%";
    $("bufferText").textContent = b.phase + " · " + b.seconds.toFixed(1) + " s ahead" + (b.loaded != null ? " · " + Math.round(b.loaded * 100) + "% loaded" : "");
  }
  $("progress").disabled = !!np.isLiveStream;
  $("progress").setAttribute("aria-valuetext", clockText(elapsedNow()) + " of " + clockText(np.duration));
  if (np.failure) say(np.failure);
  lockScreen.show(playing);
}

// MARK: the phone's lock screen and notification shade (the Media Session API): what the
// house plays, and play, pause, next, previous and seek from there. A page that plays
// nothing itself is not shown there: "lock screen" plays silence for as long as it is on
// (as Music Assistant's page does), and the phone then shows the house's controls.
const lockScreen = {
  key: null, audio: null,
  show(playing) {
    if (!("mediaSession" in navigator) || !np) return;
    const session = navigator.mediaSession, key = [np.title, np.artist, np.album, np.artworkURL].join("\u0001");
    if (key !== this.key && typeof MediaMetadata === "function") {
      this.key = key;
      const artwork = np.artworkURL ? [{ src: new URL(np.artworkURL, location.href).href }] : [{ src: new URL("/icon.svg", location.href).href, sizes: "any", type: "image/svg+xml" }];
      session.metadata = new MediaMetadata({ title: np.title || "nothing queued", artist: np.artist || "", album: np.album || np.station || "", artwork });
    }
    session.playbackState = playing ? "playing" : "paused";
    try { if (np.duration && !np.isLiveStream) session.setPositionState({ duration: np.duration, position: Math.min(np.duration, elapsedNow()), playbackRate: 1 }); } catch (e) {}
  },
  toggle() {
    if (this.audio) { this.audio.pause(); this.audio = null; }
    else {
      // A second of silence, looped (from the house: the page's policy plays nothing else).
      this.audio = new Audio("/silence.wav"); this.audio.loop = true;
      const audio = this.audio;
      audio.play().catch(e => { if (this.audio !== audio) return; say("the browser would not play (" + e.name + "): tap again"); this.audio = null; $("lockScreen").setAttribute("aria-pressed", "false"); });
    }
    $("lockScreen").setAttribute("aria-pressed", this.audio ? "true" : "false");
    this.key = null; render();
  },
};
$("lockScreen").onclick = () => lockScreen.toggle();
if ("mediaSession" in navigator) {
  const on = (action, handler) => { try { navigator.mediaSession.setActionHandler(action, handler); } catch (e) {} };
  on("play", () => call("POST", "/transport/play")); on("pause", () => call("POST", "/transport/pause"));
  on("stop", () => call("POST", "/transport/pause"));
  on("nexttrack", () => call("POST", "/transport/next")); on("previoustrack", () => call("POST", "/transport/previous"));
  on("seekto", details => { if (details.seekTime != null) call("POST", "/transport/seek", { position: details.seekTime }); });
}

// The room whose settings are open (its key), and why the group's volume is not what was asked.
let editing = null, groupNote = "";
function renderRooms() {
  keepingFocus($("zones"), renderZones);
  const box = $("volumes");
  // Not while a room's settings are being typed (a report would wipe them).
  if (box.contains(document.activeElement) && document.activeElement.closest(".edit")) return;
  keepingFocus(box, fillRooms);
}
function fillRooms() {
  const box = $("volumes"); box.innerHTML = "";
  const group = np ? np.volume : 100;
  const make = (label, value, muted, away, onChange, id, holes, room) => {
    const row = document.createElement("div"); row.className = "row"; row.id = id;
    row.innerHTML = '<label></label><input type="range" min="0" max="100"><span class="pct"></span><button class="mute"></button>';
    row.querySelector("label").textContent = label; if (away) row.querySelector("label").className = "away";
    // A Sendspin player (Music Assistant's protocol) the house streams to.
    if (room && room.report && room.report.via === "sendspin") {
      const tag = el("small", "note", "Sendspin"); tag.title = "a Sendspin player: the house streams to it over Sendspin";
      row.querySelector("label").appendChild(tag);
    }
    row.querySelector("input").setAttribute("aria-label", "volume of " + (room ? room.name : "all rooms"));
    // Holes heard in the room in the last hour (its device ran dry, or it concealed lost audio).
    if (holes !== undefined && holes !== null && !away) {
      const note = document.createElement("small"); note.className = holes > 0 ? "holes bad" : "holes";
      note.textContent = holes === 0 ? "no holes in the last hour" : holes + (holes === 1 ? " hole" : " holes") + " in the last hour";
      note.title = "silent or made-up stretches the room played in the last hour";
      row.querySelector("label").appendChild(note);
    }
    const range = row.querySelector("input"); range.value = Math.round(value);
    row.querySelector(".pct").textContent = Math.round(value) + "%";
    range.onchange = () => onChange({ volume: Number(range.value) });
    range.oninput = () => { row.querySelector(".pct").textContent = range.value + "%"; };
    const mute = row.querySelector("button"); mute.innerHTML = icon(muted ? "muted" : "sound"); mute.title = muted ? "unmute" : "mute";
    mute.setAttribute("aria-label", (muted ? "unmute " : "mute ") + (room ? room.name : "all rooms"));
    mute.onclick = () => onChange({ muted: !muted });
    box.appendChild(row);
    if (!room) {
      if (groupNote) { const note = el("small", "note", groupNote); note.id = "groupNote"; row.querySelector("label").appendChild(note); }
      return;
    }
    const more = el("button", "more", "⋯"); more.setAttribute("aria-label", "settings of " + room.name); more.setAttribute("aria-expanded", editing === room.key ? "true" : "false");
    more.onclick = () => { editing = editing === room.key ? null : room.key; renderRooms(); if (editing) { const n = document.querySelector(".edit input"); if (n) n.focus(); } };
    row.appendChild(more);
    if (editing === room.key) box.appendChild(roomEditor(room));
  };
  make("All rooms", group, np && np.muted, false, setGroupVolume, "group");
  rooms.filter(r => (r.zone || "default") === zone).forEach(r => make(r.name, r.volume, r.muted, !r.connected,
    v => call("PUT", "/rooms/" + encodeURIComponent(r.name), v), "room-" + r.key, r.holesLastHour, r));
}

// The group's volume keeps the rooms' balance: a room at its 100 % stops it short of what
// was asked. The real value shows at once, with why.
async function setGroupVolume(change) {
  const got = await call("PUT", "/volume", change);
  if (!got) return;
  const list = await call("GET", "/rooms"); if (list) rooms = list;
  groupNote = "";
  if (change.volume != null && got.volume < change.volume - 0.5) {
    const full = rooms.filter(r => (r.zone || "default") === zone && r.connected && r.volume >= 99.95).map(r => r.name);
    groupNote = "asked " + Math.round(change.volume) + " %: " + (full.length ? full.join(", ") + (full.length === 1 ? " is" : " are") + " at 100 %, " : "")
      + "the rooms keep their balance";
  }
  renderRooms();
}

// A room's name, its device's delay after the sound server (HDMI, Bluetooth), and forgetting it.
function roomEditor(room) {
  const box = el("div", "edit"); box.id = "edit-" + room.key;
  const name = el("input"); name.value = room.name; name.setAttribute("aria-label", "name of " + room.name); name.autocomplete = "off";
  const delay = el("input"); delay.type = "number"; delay.min = "0"; delay.max = "1000"; delay.step = "1"; delay.value = Math.round(room.outputDelayMs || 0);
  delay.setAttribute("aria-label", "output delay of " + room.name + " in milliseconds");
  const save = el("button", null, "save"), forget = el("button", "danger", "forget");
  forget.setAttribute("aria-label", "forget " + room.name);
  save.onclick = async () => {
    const change = {};
    if (name.value.trim() && name.value.trim() !== room.name) change.name = name.value.trim();
    if (Number(delay.value) !== Math.round(room.outputDelayMs || 0)) change.outputDelayMs = Number(delay.value);
    if (!Object.keys(change).length) { editing = null; renderRooms(); return; }
    const saved = await call("PUT", "/rooms/" + encodeURIComponent(room.name), change);
    if (saved) { rooms = rooms.filter(r => r.key !== saved.key).concat([saved]).sort((a, b) => a.name.localeCompare(b.name)); editing = null; say("saved " + saved.name, true); document.activeElement.blur(); renderRooms(); }
  };
  [name, delay].forEach(input => { input.onkeydown = e => { if (e.key === "Enter") save.onclick(); if (e.key === "Escape") { editing = null; input.blur(); renderRooms(); } }; });
  forget.onclick = async () => {
    if (!confirm("Forget " + room.name + "? Its settings go; it comes back as new if its follower plays again.")) return;
    if (await call("DELETE", "/rooms/" + encodeURIComponent(room.name)) !== null) { rooms = rooms.filter(r => r.key !== room.key); editing = null; say("forgot " + room.name, true); renderRooms(); }
  };
  const delayLabel = el("small", null, "delay (ms)");
  box.append(name, delayLabel, delay, save, forget);
  return box;
}

// The zones, each with what it plays and its rooms; a room moves by choosing its zone.
function renderZones() {
  $("zoneRow").style.display = zones.length > 1 ? "flex" : "none";
  const picker = $("zone"); picker.innerHTML = "";
  zones.forEach(z => { const o = document.createElement("option"); o.value = z.id; o.textContent = z.name; picker.appendChild(o); });
  picker.value = zone;
  $("removeZone").style.display = zone === "default" ? "none" : "";
  const box = $("zones"); box.innerHTML = "";
  zones.forEach(z => {
    const div = document.createElement("div"); div.className = "zone"; div.id = "zone-" + z.id;
    div.innerHTML = "<b></b><small></small>";
    div.querySelector("b").textContent = z.name + (z.id === zone ? " ◂" : "");
    const p = z.nowPlaying || {};
    div.querySelector("small").textContent = p.state + (p.title ? " · " + p.title + (p.artist ? " — " + p.artist : "") : "");
    rooms.filter(r => (r.zone || "default") === z.id).forEach(r => {
      const row = document.createElement("div"); row.className = "row"; row.id = "move-" + r.key;
      row.innerHTML = "<label></label><select></select>";
      row.querySelector("label").textContent = r.name; if (!r.connected) row.querySelector("label").className = "away";
      const select = row.querySelector("select"); select.setAttribute("aria-label", "zone of " + r.name);
      zones.forEach(o => { const opt = document.createElement("option"); opt.value = o.id; opt.textContent = o.name; select.appendChild(opt); });
      select.value = z.id;
      select.onchange = () => call("PUT", "/rooms/" + encodeURIComponent(r.name), { zone: select.value });
      div.appendChild(row);
    });
    box.appendChild(div);
  });
}

// Steers another zone: its card, queue and volumes, and its events.
function steer(id) {
  zone = id; localStorage.setItem("tutti-zone", id);
  np = null; queue = null; renderQueue(); renderRooms();
  if (socket) { socket.steered = true; socket.close(); }
}

function loadZones() {
  fetch("/api/v1/zones").then(r => r.json()).then(list => {
    zones = list;
    if (!zones.some(z => z.id === zone)) { steer("default"); return; }
    renderRooms();
  }).catch(() => {});
}

// The queue: tap an item to play it, drag it by its handle to move it.
let queueDrag = false, queueWaiting = null, queueMoves = Promise.resolve(), queuePending = 0;
function renderQueue() { if (!queueDrag) keepingFocus($("queue"), fillQueue); }
function fillQueue() {
  const list = $("queue"); list.innerHTML = "";
  if (!queue) return;
  queue.items.forEach(item => {
    const li = document.createElement("li"); if (item.current) li.className = "current";
    li.dataset.id = item.id;
    li.innerHTML = '<button class="handle">☰</button><span class="title"></span><span><small></small> <button class="remove">✕</button></span>';
    const name = item.title || item.path.split("/").pop();
    li.querySelector(".title").textContent = (item.index + 1) + ". " + name + (item.artist ? " — " + item.artist : "");
    li.querySelector("small").textContent = item.duration ? clockText(item.duration) : "";
    // After the moves still on their way: the index is the page's, which has made them.
    const play = () => { queueMoves = queueMoves.then(() => call("POST", "/queue/play", { index: item.index })); };
    li.onclick = play;
    activatable(li.querySelector(".title"), play, "play " + (item.index + 1) + ". " + name);
    const remove = li.querySelector(".remove"); remove.setAttribute("aria-label", "remove " + name + " from the queue");
    remove.onclick = e => { e.stopPropagation(); call("DELETE", "/queue/" + item.id); };
    const handle = li.querySelector(".handle");
    handle.setAttribute("aria-label", "move " + name + ": up and down arrows");
    handle.onclick = e => e.stopPropagation();
    handle.onpointerdown = e => dragItem(e, li, handle, item);
    // By keyboard: ↑ and ↓ move it a place, and it keeps the focus.
    handle.onkeydown = async e => {
      // From where the queue has it now (a render may have moved it since this one).
      const at = queue.items.findIndex(i => i.id === item.id), from = at < 0 ? item.index : at;
      const to = e.key === "ArrowUp" ? from - 1 : e.key === "ArrowDown" ? from + 1 : null;
      if (to === null) return;
      e.preventDefault();
      if (to < 0 || to >= queue.items.length) return;
      // On the page at once, so that a second press moves it on from where the first left
      // it, even before the house has answered the first.
      const items = queue.items.slice(), [moved] = items.splice(from, 1); items.splice(to, 0, moved);
      queue = { ...queue, items: items.map((i, n) => ({ ...i, index: n })) }; renderQueue();
      // The house takes the moves one after another, in the order they were pressed.
      // Until the last is answered, the house's news of the queue waits (it would show a
      // move the page has already passed).
      const mine = queueMoves = queueMoves.then(() => call("POST", "/queue/" + item.id + "/move", { index: to }));
      queuePending += 1; await mine; queuePending -= 1;
      if (queuePending > 0) return;
      const fresh = await call("GET", "/queue");
      if (queuePending > 0) return;
      queue = fresh || queueWaiting || queue; queueWaiting = null; renderQueue();
    };
    list.appendChild(li);
  });
}

// Rebuilds a part of the page; the control that had the focus (by its name) has it again.
function keepingFocus(box, rebuild) {
  const had = document.activeElement, name = had && had !== document.body && box.contains(had) ? had.getAttribute("aria-label") : null;
  rebuild();
  if (name) { const again = [...box.querySelectorAll("[aria-label]")].find(n => n.getAttribute("aria-label") === name); if (again) again.focus(); }
}

// Drags a queue item (mouse, finger or pen): it follows the pointer, a line shows where it
// will land, and letting go moves it there in the house's queue.
function dragItem(e, li, handle, item) {
  e.preventDefault();
  const items = [...$("queue").children], from = items.indexOf(li), startY = e.clientY;
  let to = from;
  queueDrag = true; li.classList.add("dragging");
  try { handle.setPointerCapture(e.pointerId); } catch (err) {}
  const clear = () => items.forEach(o => o.classList.remove("gap-before", "gap-after"));
  handle.onpointermove = ev => {
    li.style.transform = "translateY(" + (ev.clientY - startY) + "px)";
    to = from;
    items.forEach((other, i) => {
      if (other === li) return;
      const r = other.getBoundingClientRect(), middle = r.top + r.height / 2;
      if (i > from && ev.clientY > middle) to = Math.max(to, i);
      if (i < from && ev.clientY < middle) to = Math.min(to, i);
    });
    clear(); if (to !== from) items[to].classList.add(to > from ? "gap-after" : "gap-before");
  };
  handle.onpointerup = handle.onpointercancel = async ev => {
    handle.onpointermove = handle.onpointerup = handle.onpointercancel = null;
    li.style.transform = ""; li.classList.remove("dragging"); clear();
    if (ev.type === "pointerup" && to !== from) await call("POST", "/queue/" + item.id + "/move", { index: to });
    queueDrag = false;
    if (queueWaiting) { queue = queueWaiting; queueWaiting = null; }
    renderQueue();
  };
}

// MARK: the views: one at a time, picked in the dock.
function show(view) {
  if (!["now", "library", "queue", "rooms"].includes(view)) view = "now";
  localStorage.setItem("tutti-view", view);
  document.querySelectorAll(".view").forEach(v => v.classList.toggle("on", v.id === "view-" + view));
  document.querySelectorAll("#tabs button").forEach(b => b.classList.toggle("on", b.dataset.view === view));
  document.body.classList.toggle("wide", view === "library");
  $("mini").classList.toggle("on", view !== "now" && !!np);
  if (view === "library" && !lib.loaded) browse(lib.kind);
}
document.querySelectorAll("#tabs button").forEach(b => { b.onclick = () => show(b.dataset.view); });
$("miniToggle").onclick = () => call("POST", "/transport/toggle");
$("mini").onclick = e => { if (e.target.closest("button") === null) show("now"); };

// MARK: the library: albums, artists, folders; search as you type; play or queue by id.
const lib = { kind: "albums", loaded: false, searchTimer: null, asked: 0 };
async function read(path) {
  const r = await fetch("/api/v1" + path);
  const data = await r.json().catch(() => null);
  if (!r.ok) throw new Error(data && data.error ? data.error : "error " + r.status);
  return data;
}
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; };
// A tile or row that opens or plays: a tab stop, a button to a screen reader, Enter or Space.
function activatable(node, action, label) {
  node.tabIndex = 0; node.setAttribute("role", "button"); if (label) node.setAttribute("aria-label", label);
  node.onclick = e => { e.stopPropagation(); action(e); };
  node.onkeydown = e => { if ((e.key === "Enter" || e.key === " ") && e.target === node) { e.preventDefault(); action(e); } };
}
const counted = (n, noun) => n + " " + noun + (n === 1 ? "" : "s");
function libraryShows(...nodes) { const box = $("libraryBox"); box.innerHTML = ""; nodes.forEach(n => box.appendChild(n)); }
function libraryFailed(e) { libraryShows(el("p", "hint", e.message)); }

// Queues library tracks: now (played at once), next, or at the end.
async function queueTracks(ids, placement) {
  if (!ids.length) return;
  const added = await call("POST", "/queue", { ids, placement });
  if (added) say(placement === "now" ? "playing " + (added[0].title || "") : "added " + counted(added.length, "track") + (placement === "next" ? " to play next" : " to the queue"), true);
}

function cover(album) {
  const c = el("div", "cover", album.artworkURL ? "" : "♪");
  if (album.artworkURL) c.style.backgroundImage = "url(" + album.artworkURL + ")";
  return c;
}

function albumGrid(albums) {
  const grid = el("div", "grid");
  albums.forEach(a => {
    const tile = el("div", "tile"); tile.id = "album-" + a.id;
    tile.append(cover(a), el("b", null, a.title), el("small", null, (a.artist || "") + (a.year ? " · " + a.year : "")));
    activatable(tile, () => openAlbum(a.id), "album " + a.title + (a.artist ? " by " + a.artist : ""));
    grid.appendChild(tile);
  });
  return grid;
}

function trackList(tracks, withAlbum) {
  const list = el("ol");
  tracks.forEach(t => {
    const li = el("li", "track"); li.id = "track-" + t.id;
    const what = el("div", "what", (t.trackNumber && !withAlbum ? t.trackNumber + ". " : "") + t.title);
    what.appendChild(el("small", null, [t.artist, withAlbum ? t.album : null, t.duration ? clockText(t.duration) : null].filter(Boolean).join(" · ")));
    const acts = el("div", "acts"), play = el("button", "play", "▶"), add = el("button", "add", "+");
    play.title = "play now"; add.title = "add to the queue";
    play.onclick = e => { e.stopPropagation(); queueTracks([t.id], "now"); };
    add.onclick = e => { e.stopPropagation(); queueTracks([t.id], "end"); };
    acts.append(play, add); li.append(what, acts);
    li.onclick = () => queueTracks([t.id], "now");
    play.setAttribute("aria-label", "play " + t.title + " now"); add.setAttribute("aria-label", "add " + t.title + " to the queue");
    activatable(what, () => queueTracks([t.id], "now"), "play " + t.title);
    list.appendChild(li);
  });
  return list;
}

function actions(ids) {
  const box = el("div", "actions");
  [["▶ Play", "now", "playAll"], ["Play next", "next", "playNext"], ["+ Queue", "end", "queueAll"]].forEach(([label, placement, id]) => {
    const b = el("button", null, label); b.id = id; b.onclick = () => queueTracks(ids, placement); box.appendChild(b);
  });
  return box;
}

function backButton() {
  const b = el("button", "back", "‹ back"); b.onclick = () => browse(lib.kind); return b;
}

async function browse(kind) {
  lib.kind = kind; lib.loaded = true;
  document.querySelectorAll("#browse button").forEach(b => b.classList.toggle("on", b.dataset.kind === kind));
  if ($("search").value.trim()) { runSearch(); return; }
  const asked = ++lib.asked;
  try {
    if (kind === "albums") {
      const albums = await read("/library/albums");
      if (asked === lib.asked) libraryShows(albums.length ? albumGrid(albums) : el("p", "hint", "No albums yet: the library is being scanned, or its folders hold no music."));
    } else if (kind === "artists") {
      const artists = await read("/library/artists");
      if (asked !== lib.asked) return;
      const list = el("ol");
      artists.forEach(a => { const li = el("li", null, a.name); li.id = "artist-" + a.id;
        li.appendChild(el("small", null, counted(a.albumCount, "album") + " · " + counted(a.trackCount, "track"))); activatable(li, () => openArtist(a.id), "artist " + a.name); list.appendChild(li); });
      libraryShows(list);
    } else {
      openFolder("");
    }
  } catch (e) { if (asked === lib.asked) libraryFailed(e); }
}

async function openAlbum(id) {
  clearTimeout(lib.searchTimer);
  const asked = ++lib.asked;
  try {
    const a = await read("/library/albums/" + id);
    if (asked !== lib.asked) return;
    const head = el("div", "detail"), text = el("div");
    text.append(el("h3", null, a.title), el("div", null, a.artist || ""), el("small", null, [a.year, counted(a.trackCount, "track"), clockText(a.duration)].filter(Boolean).join(" · ")));
    head.append(cover(a), text);
    libraryShows(backButton(), head, actions(a.tracks.map(t => t.id)), trackList(a.tracks, false));
  } catch (e) { if (asked === lib.asked) libraryFailed(e); }
}

async function openArtist(id) {
  clearTimeout(lib.searchTimer);
  const asked = ++lib.asked;
  try {
    const a = await read("/library/artists/" + id);
    if (asked !== lib.asked) return;
    const nodes = [backButton(), el("h3", null, a.name)];
    if (a.albums && a.albums.length) nodes.push(el("h4", null, "Albums"), albumGrid(a.albums));
    if (a.otherTracks && a.otherTracks.length) nodes.push(el("h4", null, "Tracks"), trackList(a.otherTracks, true));
    libraryShows(...nodes);
  } catch (e) { if (asked === lib.asked) libraryFailed(e); }
}

async function openFolder(path) {
  clearTimeout(lib.searchTimer);
  const asked = ++lib.asked;
  try {
    const f = await read("/library/folders?path=" + encodeURIComponent(path));
    if (asked !== lib.asked) return;
    const nodes = [];
    if (path) {
      const up = el("button", "back", "‹ " + (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "music folders"));
      up.onclick = () => openFolder(path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");
      nodes.push(up, el("h3", null, path.split("/").pop()));
    }
    const list = el("ol");
    f.folders.forEach(sub => { const li = el("li", null, "📁 " + sub.name); li.appendChild(el("small", null, counted(sub.trackCount, "track")));
      activatable(li, () => openFolder(sub.path), "folder " + sub.name); list.appendChild(li); });
    nodes.push(list);
    if (f.tracks.length) nodes.push(actions(f.tracks.map(t => t.id)), trackList(f.tracks, false));
    libraryShows(...nodes);
  } catch (e) { if (asked === lib.asked) libraryFailed(e); }
}

// Search as you type: asked a moment after the last key, only the newest answer shown.
async function runSearch() {
  const q = $("search").value.trim();
  if (!q) { browse(lib.kind); return; }
  const asked = ++lib.asked;
  try {
    const found = await read("/library/search?q=" + encodeURIComponent(q) + "&limit=30");
    if (asked !== lib.asked) return;
    const nodes = [];
    if (found.artists.length) {
      const list = el("ol");
      found.artists.forEach(a => { const li = el("li", null, a.name); li.id = "artist-" + a.id; activatable(li, () => openArtist(a.id), "artist " + a.name); list.appendChild(li); });
      nodes.push(el("h4", null, "Artists"), list);
    }
    if (found.albums.length) nodes.push(el("h4", null, "Albums"), albumGrid(found.albums));
    if (found.tracks.length) nodes.push(el("h4", null, "Tracks"), trackList(found.tracks, true));
    if (!nodes.length) nodes.push(el("p", "hint", "Nothing matches “" + q + "”."));
    libraryShows(...nodes);
  } catch (e) { if (asked === lib.asked) libraryFailed(e); }
}
$("search").oninput = () => { clearTimeout(lib.searchTimer); lib.searchTimer = setTimeout(runSearch, 150); };
document.querySelectorAll("#browse button").forEach(b => { b.onclick = () => { $("search").value = ""; browse(b.dataset.kind); }; });

async function connect() {
  // With the token, a one-time ticket: the house's own event streams, which no stranger can spend.
  let ticket = "";
  if (token) { try { const r = await fetch("/api/v1/events/ticket", { method: "POST", headers: { "Authorization": "Bearer " + token } });
    if (r.ok) ticket = "&ticket=" + encodeURIComponent((await r.json()).ticket); } catch (e) {} }
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/api/v1/events?zone=" + encodeURIComponent(zone) + ticket);
  socket = ws;
  let t1 = 0, best = Infinity, timer = null;
  ws.onopen = () => { if ($("message").textContent === unreachable) say(""); const ask = () => { t1 = performance.now(); ws.send(JSON.stringify({ type: "time", id: 1, t1 })); timer = setTimeout(ask, 2000); }; ask(); };
  ws.onmessage = e => { const m = JSON.parse(e.data);
    if (m.type === "time") { const t4 = performance.now(), rtt = t4 - m.t1 - (m.t3 - m.t2) / 1e6;
      if (rtt <= best * 1.5) { best = Math.min(best, rtt); offset = ((m.t2 / 1e6 - m.t1) + (m.t3 / 1e6 - t4)) / 2; } return; }
    if (m.zones) { zones = m.zones; if (!zones.some(z => z.id === zone)) { steer("default"); return; } renderRooms(); }
    if (m.nowPlaying) { np = m.nowPlaying; const z = zones.find(z => z.id === zone); if (z) { z.nowPlaying = np; } }
    if (m.queue) { if (queueDrag || queuePending > 0) queueWaiting = m.queue; else { queue = m.queue; renderQueue(); } }
    if (m.rooms) { rooms = m.rooms; renderRooms(); }
    if (m.room) { rooms = rooms.filter(r => r.key !== m.room.key); rooms.push(m.room); rooms.sort((a, b) => a.name.localeCompare(b.name)); renderRooms(); }
    if (m.type === "now-playing" && zones.length > 1) keepingFocus($("zones"), renderZones);
    if (m.type === "volume" || m.type === "hello") renderRooms();
    render(); };
  ws.onclose = () => { clearTimeout(timer); if (ws !== socket) return;
    $("state").textContent = "reconnecting…"; if (!ws.steered) say(unreachable); setTimeout(connect, ws.steered ? 0 : 1000); };
}

// Calibration: the rooms play a second of noise each, in turn, while this phone's
// microphone records them (its own processing off: no echo cancelling, noise suppression or
// gain control, which would smear the sound); the coordinator finds them in the recording.
const sleep = ms => new Promise(done => setTimeout(done, ms));
$("calLevel").oninput = () => { $("calLevelText").textContent = $("calLevel").value + "%"; };
async function calibrationPass(keys, tries) {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false, channelCount: 1 } });
  const context = new AudioContext({ sampleRate: 48000 });
  try {
    await context.resume();
    const source = context.createMediaStreamSource(stream), tap = context.createScriptProcessor(4096, 1, 1), quiet = context.createGain();
    const chunks = [];
    // Each block with its time on the context's clock: a block the page was too busy to take
    // leaves a gap of silence where it was, not a recording that runs on too early.
    tap.onaudioprocess = e => chunks.push({ at: e.playbackTime, data: new Float32Array(e.inputBuffer.getChannelData(0)) });
    quiet.gain.value = 0; source.connect(tap); tap.connect(quiet); quiet.connect(context.destination);
    const waited = Date.now();
    while (!chunks.length) { if (Date.now() - waited > 5000) throw new Error("the microphone gave no sound"); await sleep(50); }
    // A browser's capture settles in its first second (its clock wanders while it does).
    await sleep(1000);
    const started = await call("POST", "/calibration", { level: $("calLevel").value / 100, rooms: keys });
    if (!started) return null;
    $("calResult").textContent = "listening to " + started.rooms.join(", ")
      + ": keep quiet for " + Math.ceil(started.recordSeconds) + " s…";
    await sleep((started.recordSeconds + 0.3) * 1000);
    tap.disconnect();
    // Each block where the audio clock says it began: a block the page missed, or one
    // Chromium's capture lost part of, leaves silence where it was, not a recording that
    // runs on too early (placed end to end, passes here read 900 to 3600 ppm short).
    const rate = context.sampleRate, first = chunks[0].at, last = chunks[chunks.length - 1];
    let samples = new Float32Array(Math.round((last.at - first) * rate) + last.data.length);
    for (const c of chunks) samples.set(c.data, Math.min(samples.length - c.data.length, Math.max(0, Math.round((c.at - first) * rate))));
    // A browser that would not record at 48 kHz: to 48 kHz, linearly.
    if (context.sampleRate !== 48000) {
      const ratio = context.sampleRate / 48000, out = new Float32Array(Math.floor(samples.length / ratio));
      for (let i = 0; i < out.length; i++) { const x = i * ratio, k = Math.floor(x), f = x - k; out[i] = samples[k] * (1 - f) + (samples[k + 1] || 0) * f; }
      samples = out;
    }
    const r = await fetch("/api/v1/calibration/" + encodeURIComponent(started.id) + "/recording?by=web",
      { method: "POST", headers: { "Authorization": "Bearer " + token, "Content-Type": "application/octet-stream" }, body: samples.buffer });
    const report = await r.json().catch(() => null);
    // A recording that lost or gained sound on the way: made again, twice at most.
    if (r.status === 409 && report && /record again/.test(report.error || "") && (tries || 0) < 2) {
      $("calResult").textContent = "the recording was not steady; again…";
      return calibrationPass(keys, (tries || 0) + 1);  // this pass's microphone closes meanwhile (finally)
    }
    if (!r.ok) { say(report && report.error ? report.error : "error " + r.status); return null; }
    return report;
  } finally { stream.getTracks().forEach(t => t.stop()); context.close(); }
}
// What a pass found: each room's offset (ms, and cm at the speed of sound) and its delay.
function showCalibration(report, checked) {
  const box = $("calResult"); box.innerHTML = "";
  const table = el("table", "calTable"), head = el("tr");
  ["room", "offset", "", "delay now", checked ? "" : "would be"].forEach(t => head.appendChild(el("th", null, t)));
  table.appendChild(head);
  for (const room of report.outcome.rooms) {
    const row = el("tr"); row.appendChild(el("td", null, report.names[room.room] || room.room));
    if (room.heard) {
      row.appendChild(el("td", "num", (room.offsetMs >= 0 ? "+" : "") + room.offsetMs.toFixed(2) + " ms"));
      row.appendChild(el("td", "num", Math.round(room.offsetMs * 34.3) + " cm"));
    } else {
      const why = el("td", "bad", "not heard: muted, too quiet or too far?"); why.colSpan = 2; row.appendChild(why);
    }
    row.appendChild(el("td", "num", room.delayMs.toFixed(1) + " ms"));
    row.appendChild(el("td", "num", checked || !room.heard ? "" : room.proposedDelayMs.toFixed(1) + " ms"));
    table.appendChild(row);
  }
  box.appendChild(table);
  const spread = report.outcome.spreadMs;
  if (checked) { box.appendChild(el("p", null, spread == null ? "the check heard no room" : "now within " + (spread * 1000).toFixed(0) + " µs (" + (spread * 34.3).toFixed(1) + " cm) of each other")); return; }
  if (spread == null) { box.appendChild(el("p", "bad", "no room was heard: raise the level, or come closer")); return; }
  box.appendChild(el("p", null, "the rooms are " + spread.toFixed(2) + " ms (" + Math.round(spread * 34.3) + " cm) apart here"));
  const apply = el("button", null, "apply these delays"); apply.id = "calApply";
  apply.onclick = async () => {
    apply.disabled = true;
    const applied = await call("POST", "/calibration/" + encodeURIComponent(report.outcome.id) + "/apply?by=web");
    if (!applied) { apply.disabled = false; return; }
    const list = await call("GET", "/rooms"); if (list) { rooms = list; renderRooms(); }
    $("calResult").textContent = "applied; checking…";
    const check = await calibrationPass(report.outcome.rooms.map(r => r.room)).catch(e => { say(String(e.message || e)); return null; });
    if (check) showCalibration(check, true);
  };
  box.appendChild(apply);
}
$("calibrate").onclick = async () => {
  if (!token) { call("POST", "/calibration"); return; }
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) { say("the microphone is only open to this page over HTTPS (or on this machine): see the README"); return; }
  $("calibrate").disabled = true;
  try { const report = await calibrationPass(null); if (report) showCalibration(report, false); }
  catch (e) { say(e && e.name === "NotAllowedError" ? "the microphone was not allowed" : String(e.message || e)); $("calResult").textContent = ""; }
  finally { $("calibrate").disabled = false; }
};

setInterval(() => { if (!np || dragging) return; const t = elapsedNow();
  $("elapsed").textContent = clockText(t); $("progress").value = np.duration ? Math.round(t / np.duration * 1000) : 0; }, 250);
if (!token) $("tokenBox").style.display = "flex";
// The house's name, as it is announced on the network.
fetch("/api/v1/status").then(r => r.json()).then(s => { if (s.house) { $("house").textContent = s.house; document.title = s.house + " · tutti"; } }).catch(() => {});
loadZones();
setInterval(loadZones, 10000);
show(localStorage.getItem("tutti-view") || "now");
// The page's end clears the dock, however tall it is (a message, the token, the mini player).
new ResizeObserver(() => { document.querySelector("main").style.paddingBottom = ($("dock").offsetHeight + 20) + "px"; }).observe($("dock"));
connect();
