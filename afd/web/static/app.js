// The afd dashboard: plain JavaScript, no framework, nothing fetched from anywhere but this server.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const STATUS_EVERY = 5000; // ms: a fallback refresh when no event arrives
const REFRESH_GAP = 400; // ms: events arriving together cause one status fetch
const MAX_EVENTS = 200;

const view = {
  status: null,
  filter: "all",
  selected: null, // session name
  rows: new Map(), // session name -> <tr>
  jobs: [],
  ledgerCount: -1,
  lastEventId: 0,
};

// --- talking to the server ----------------------------------------------------
//
// No cookie: a browser sends a cookie for 127.0.0.1 to every port of it, so a page on another
// port could collect it. The session token lives in this tab's sessionStorage, which only this
// origin (scheme, host and port) can read, and goes in an Authorization header, which the
// browser adds to nothing by itself. A new tab, or a closed one reopened, logs in again.

const SESSION_KEY = "afd-session";
let loggedOut = false;

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function session() {
  try { return sessionStorage.getItem(SESSION_KEY); } catch (err) { return null; }
}

function headers(extra) {
  const h = Object.assign({}, extra);
  const token = session();
  if (token) h.authorization = `Bearer ${token}`;
  return h;
}

function logOut() {
  try { sessionStorage.removeItem(SESSION_KEY); } catch (err) { /* storage off: nothing kept */ }
  loggedOut = true;
  const live = $("#live");
  live.textContent = "logged out";
  live.className = "live off";
}

async function api(method, path, body) {
  const init = { method, headers: headers(), credentials: "omit", cache: "no-store" };
  if (method !== "GET") {
    init.headers["x-afd"] = "1";
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body || {});
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, "the dashboard's server cannot be reached (is afd running?)");
  }
  let data = null;
  try { data = await response.json(); } catch (err) { data = null; }
  if (response.status === 401 && path !== "/api/login") logOut();
  if (!response.ok) throw new ApiError(response.status, (data && data.error) || response.statusText);
  return data;
}

// The login address carries a one-time token in its fragment (#token=…), which no request
// sends. It is taken out of the address at once and traded for this tab's session token.
async function logIn() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (!token) return session() !== null;
  params.delete("token");
  const rest = params.toString();
  history.replaceState(null, "", rest ? `${location.pathname}#${rest}` : location.pathname);
  try {
    const answer = await api("POST", "/api/login", { token });
    sessionStorage.setItem(SESSION_KEY, answer.session);
    return true;
  } catch (err) {
    if (err.status === 401) {
      notify("This login address was used already or has expired: run `afd web` in a terminal and open the new address.", "bad");
    } else {
      notify(explain(err), "bad");
    }
    return session() !== null;
  }
}

function explain(err) {
  switch (err.status) {
    case 400: return `Bad request: ${err.message}`;
    case 401: return "Logged out: run `afd web` in a terminal and open the address it prints (each tab logs in on its own).";
    case 409: return `Refused: ${err.message}`;
    case 503: return `afd is not answering: ${err.message}`;
    case 504: return "The daemon did not confirm in time; check the ledger before retrying.";
    default: return err.message;
  }
}

function notify(text, kind) {
  const box = $("#notice");
  box.textContent = inWords(text);
  box.className = `notice ${kind || ""}`;
  box.hidden = !text;
}

// --- text from outside ------------------------------------------------------------

// As afd.display.text.neutral: control characters and bidirectional overrides in names, missions and
// banners are shown as escapes, so text an agent wrote cannot reorder or hide what the page says.
const HOSTILE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;
function neutral(text) {
  text = text == null ? "" : String(text);
  return text.replace(/(?:\r\n|[\n\u2028\u2029])+/g, " ").replace(HOSTILE, (c) => {
    const code = c.charCodeAt(0);
    if (c === "\t") return " ";
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

// --- time -----------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, "0");

function localTime(iso, withDate) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  const today = new Date();
  if (!withDate && d.toDateString() === today.toDateString()) return time;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

function countdown(iso, now) {
  const left = Math.round((new Date(iso).getTime() - now) / 1000);
  if (Number.isNaN(left)) return "";
  if (left <= 0) return "reset time passed";
  const d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600);
  const m = Math.floor((left % 3600) / 60), s = left % 60;
  const parts = d ? [`${d}d`, `${h}h`, `${m}m`] : h ? [`${h}h`, `${m}m`, `${s}s`] : m ? [`${m}m`, `${s}s`] : [`${s}s`];
  return `resets in ${parts.join(" ")}`;
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll("[data-reset]")) {
    const text = countdown(el.dataset.reset, now);
    if (el.textContent !== text) el.textContent = text;
  }
}

// ISO UTC times in afd's words ("resume at 2026-07-13T09:02:00Z", and older rows' "2026-07-13 09:02 UTC")
// read in the browser's zone, with a countdown while ahead; text from outside shown neutral first.
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})|\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})? UTC\b/g;
function whenInWords(iso) {
  const at = iso.endsWith(" UTC") ? iso.replace(" ", "T").replace(" UTC", "Z") : iso;
  const left = new Date(at).getTime() - Date.now();
  const shown = localTime(at);
  if (Number.isNaN(left) || left <= 0) return shown;
  const m = Math.round(left / 60000), h = Math.floor(m / 60);
  return `${shown} (in ${h >= 24 ? `${Math.floor(h / 24)}d${h % 24}h` : h ? `${h}h${String(m % 60).padStart(2, "0")}m` : `${m}m`})`;
}
const inWords = (text) => neutral(text).replace(ISO, whenInWords);

// --- sessions ---------------------------------------------------------------------

const LIMITED = new Set(["limited", "all_limited"]);
const BUSY = new Set(["working", "resuming", "handing_off"]);

// The person's hold (`afd sessions pause`), while it lasts: "until 17:30", "until you unpause it"; else "".
function pausedWords(s) {
  const p = s.paused;
  if (!p) return "";
  if (!p.until) return "paused until you unpause it (afd sessions unpause)";
  return Date.parse(p.until) > Date.now() ? `paused until ${localTime(p.until, true)}` : "";
}

function needsYou(s) {
  return s.state === "needs_human" || (s.next && s.next.action === "needs-human");
}

function matches(s, filter) {
  if (filter === "limited") return LIMITED.has(s.state);
  if (filter === "needs") return needsYou(s);
  if (filter === "working") return BUSY.has(s.state);
  return true;
}

function setText(el, text) {
  text = neutral(text);
  if (el.textContent !== text) el.textContent = text;
}

// Each cell names its column, so a table drawn as a list of cards in a narrow window still says what is what.
function labelled(table, tr) {
  const heads = table.tHead.rows[0].cells;
  for (const [i, td] of [...tr.cells].entries()) if (heads[i]) td.dataset.label = heads[i].textContent;
  return tr;
}

function newRow(name) {
  const tr = document.createElement("tr");
  tr.dataset.session = name;
  for (const cls of ["name", "location", "agent", "state", "mission", "next", "witnesses", "handoffs num"]) {
    const td = document.createElement("td");
    td.className = cls;
    tr.appendChild(td);
  }
  labelled($("#sessions"), tr);
  // A long mission shows its first lines; the whole of it is the cell's tooltip and in the session's facts.
  tr.cells[4].appendChild(Object.assign(document.createElement("div"), { className: "clamp" }));
  tr.cells[2].append(document.createElement("span"),
    Object.assign(document.createElement("span"), { className: "account muted" }));
  const open = document.createElement("button");
  open.type = "button";
  open.className = "link";
  open.textContent = neutral(name);
  open.addEventListener("click", () => select(name));
  tr.cells[0].appendChild(open);
  const chip = document.createElement("span");
  chip.className = "chip";
  const paused = document.createElement("span");
  paused.className = "chip paused";
  paused.hidden = true;
  paused.textContent = "paused";
  const clock = document.createElement("span");
  clock.className = "countdown";
  tr.cells[3].append(chip, paused, clock);
  return tr;
}

function fillRow(tr, s) {
  const c = tr.cells;
  setText(c[1], s.location || s.pane);
  const agent = s.agent ? s.agent + (s.identity_source === "user" ? " (your word)" : "") : "?";
  setText(c[2].firstChild, agent);
  // The account, as the user named it, when it is not the agent's default one.
  const account = s.account && s.account !== s.agent ? s.account_label || s.account : "";
  setText(c[2].lastChild, account);
  if (c[2].lastChild.title !== (account ? s.account : "")) c[2].lastChild.title = account ? s.account : "";
  const chip = c[3].firstChild, clock = c[3].lastChild;
  setText(chip, s.state.replace("_", " "));
  const cls = `chip s-${s.state}`;
  if (chip.className !== cls) chip.className = cls;
  const paused = c[3].children[1], hold = pausedWords(s);
  if (paused.hidden !== !hold) paused.hidden = !hold;
  if (paused.title !== (hold || "")) paused.title = hold || "";
  const reset = LIMITED.has(s.state) && s.reset_at ? s.reset_at : "";
  if ((clock.dataset.reset || "") !== reset) {
    if (reset) clock.dataset.reset = reset; else delete clock.dataset.reset;
    clock.textContent = reset ? countdown(reset, Date.now()) : "";
    clock.title = reset ? `at ${localTime(reset, true)}` : "";
  }
  setText(c[4].firstChild, s.mission || "—");
  if (c[4].title !== (s.mission || "")) c[4].title = s.mission || "";
  setText(c[5], inWords(s.next_action) || "—");
  setText(c[6], s.witnesses || "—");
  setText(c[7], s.handoffs);
  tr.setAttribute("aria-current", s.name === view.selected ? "true" : "false");
}

function renderSessions() {
  const sessions = view.status.sessions;
  const body = $("#sessions tbody");
  const seen = new Set();
  let shown = 0;
  let before = null; // keep the daemon's order with as few moves as possible
  for (const s of sessions) {
    seen.add(s.name);
    let tr = view.rows.get(s.name);
    if (!tr) { tr = newRow(s.name); view.rows.set(s.name, tr); }
    fillRow(tr, s);
    const visible = matches(s, view.filter);
    if (tr.hidden === visible) tr.hidden = !visible;
    if (visible) shown += 1;
    const wanted = before ? before.nextSibling : body.firstChild;
    if (wanted !== tr) body.insertBefore(tr, wanted);
    before = tr;
  }
  for (const [name, tr] of view.rows) {
    if (!seen.has(name)) { tr.remove(); view.rows.delete(name); }
  }
  const counts = {
    all: sessions.length,
    limited: sessions.filter((s) => matches(s, "limited")).length,
    needs: sessions.filter(needsYou).length,
    working: sessions.filter((s) => matches(s, "working")).length,
  };
  for (const b of document.querySelectorAll("#filters button")) setText($(".n", b), `(${counts[b.dataset.filter]})`);
  setText($("#count"), `${shown} of ${sessions.length}`);
  $("#empty").hidden = shown > 0;
}

function renderAgents() {
  const body = $("#agents tbody");
  // One row per account (an agent's default account is named after it); an older daemon sends agents only.
  const rows = (view.status.accounts || view.status.agents).map((a) => {
    const tr = document.createElement("tr");
    tr.dataset.account = a.name;
    tr.dataset.agent = a.agent || a.name;
    const state = document.createElement("span");
    state.className = `chip s-${a.state}`;
    state.textContent = a.state;
    const reset = document.createElement("td");
    if (a.reset_at) {
      reset.textContent = localTime(a.reset_at) + " ";
      const clock = document.createElement("span");
      clock.className = "countdown";
      clock.dataset.reset = a.reset_at;
      clock.textContent = countdown(a.reset_at, Date.now());
      reset.appendChild(clock);
    } else {
      reset.textContent = "—";
    }
    // As the user named it; an account of its own as its agent and a short directory (`claude · ~/.claude-x`).
    const shown = a.label || a.name;
    const name = a.agent && a.agent !== a.name && !shown.startsWith(`${a.agent} · `) ? `${shown} (${a.agent})` : shown;
    const seen = a.source_host ? `seen on ${a.source_host}${a.observed_at ? ` ${localTime(a.observed_at)}` : ""}`
      : a.observed_at ? `seen ${localTime(a.observed_at)}${a.source_session ? ` in ${a.source_session}` : ""}` : "never seen";
    const cells = [name, state, reset];
    for (const value of cells) {
      if (value instanceof HTMLTableCellElement) { tr.appendChild(value); continue; }
      const td = document.createElement("td");
      if (value instanceof Node) td.appendChild(value); else td.textContent = neutral(value);
      tr.appendChild(td);
    }
    tr.cells[0].title = a.name;
    tr.cells[0].appendChild(Object.assign(document.createElement("span"), { className: "seen muted", textContent: seen }));
    return labelled($("#agents"), tr);
  });
  body.replaceChildren(...rows);
}

// The fleet: every host `afd hosts add` added, how it last answered, and its sessions (docs/fleet.md).
function renderFleet(hosts) {
  const rows = hosts.map((h) => {
    const tr = document.createElement("tr");
    tr.dataset.host = h.name;
    const contact = h.contact === null ? "not asked yet"
      : h.stale ? `${h.contact}, stale since ${h.stale_since ? localTime(h.stale_since) : "?"}`
      : `answered ${localTime(h.answered_at)}`;
    const sessions = (h.sessions || []).map((s) => `${s.name} · ${s.state}`).join(", ") || "none";
    for (const value of [`${h.name}${h.version ? ` · afd ${h.version}` : ""}`, contact, sessions]) {
      const td = document.createElement("td");
      td.textContent = neutral(value);
      tr.appendChild(td);
    }
    if (h.stale) tr.classList.add("stale");
    if (h.error) tr.title = neutral(h.error);
    return labelled($("#fleet"), tr);
  });
  $("#fleet tbody").replaceChildren(...rows);
  $("#fleet-panel").hidden = rows.length === 0;
}

// Usage before the wall: per account and window, the same panel as `afd usage` (its JSON is in docs/usage.md).
const WINDOWS = { five_hour: "5-hour", seven_day: "7-day", spend_limit: "spend", walls: "until a wall" };

function ageWords(seconds) {
  if (seconds === null || seconds === undefined) return "?";
  if (seconds < 90) return `${Math.floor(seconds)}s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)}m`;
  return `${(seconds / 3600).toFixed(1)}h`;
}

function runsOut(w) {
  const f = w.forecast;
  if (!f) return w.used_percent !== null && w.used_percent >= 100 ? "used up" : "—";
  if (f.lasts_to_reset) return "not before the reset";
  const early = f.earliest ? localTime(f.earliest) : null;
  const late = f.latest ? localTime(f.latest) : "after the reset";
  return early && early !== late ? `${early} – ${late}` : (early || late);
}

function renderUsage() {
  const figures = view.status.usage;
  const rows = [];
  for (const a of (figures && figures.accounts) || []) {
    for (const w of a.windows) {
      const tr = document.createElement("tr");
      tr.dataset.account = a.account;
      tr.dataset.window = w.window;
      const label = (WINDOWS[w.window] || w.window) + (w.limit_id && w.limit_id !== a.agent ? ` (${w.limit_id})` : "");
      const used = document.createElement("td");
      used.textContent = w.used_percent === null ? "?" : `${w.used_percent} %`;
      if (w.used_percent !== null) used.className = w.used_percent >= 95 ? "u-high" : w.used_percent >= 80 ? "u-warn" : "";
      if (w.resets_at) used.title = `resets ${localTime(w.resets_at, true)}`;
      const figure = w.provenance === "calibrated"
        ? `calibrated from ${w.stops} stop${w.stops === 1 ? "" : "s"}`
        : `exact, ${ageWords(w.age_seconds)} old${w.stale ? " (stale)" : ""}`;
      for (const value of [a.account, label, used, runsOut(w), figure]) {
        if (value instanceof HTMLTableCellElement) { tr.appendChild(value); continue; }
        const td = document.createElement("td");
        td.textContent = value;
        tr.appendChild(td);
      }
      if (w.stale) tr.classList.add("stale");
      rows.push(tr);
    }
  }
  $("#usage tbody").replaceChildren(...rows);
  $("#usage-empty").hidden = rows.length > 0;
}

function eventItem(e) {
  const li = document.createElement("li");
  const time = document.createElement("time");
  time.dateTime = e.at;
  time.textContent = localTime(e.at);
  const kind = document.createElement("span");
  kind.className = "kind";
  kind.textContent = e.kind;
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = neutral(e.session);
  li.append(time, kind, who, document.createTextNode(inWords(e.message)));
  return li;
}

// An event's words name an account no one named by its key (`claude@/tmp/x/.claude`): shown by its label.
function named(e) {
  let message = e.message || "";
  for (const a of (view.status && view.status.accounts) || []) {
    if (a.label && a.label !== a.name && message.includes(a.name)) message = message.split(a.name).join(a.label);
  }
  return message === e.message ? e : { ...e, message };
}

function renderEvents(events) {
  // The daemon lists oldest first; the page shows the newest on top.
  $("#events").replaceChildren(...events.slice().reverse().map((e) => eventItem(named(e))));
}

function addEvent(e) {
  const list = $("#events");
  list.insertBefore(eventItem(named(e)), list.firstChild);
  while (list.children.length > MAX_EVENTS) list.lastChild.remove();
}

function renderDaemon() {
  const d = view.status.daemon || {};
  setText($("#daemon"), d.running ? `afd ${d.version} · pid ${d.pid} · tmux ${d.server || ""}` : "afd is not running");
}

// --- one session ---------------------------------------------------------------------

function current() {
  return view.status && view.status.sessions.find((s) => s.name === view.selected);
}

function select(name, focus = true) {
  view.selected = name;
  view.ledgerCount = -1;
  history.replaceState(null, "", name ? `#session=${encodeURIComponent(name)}` : location.pathname);
  for (const [n, tr] of view.rows) tr.setAttribute("aria-current", n === name ? "true" : "false");
  $("#detail").hidden = !name;
  if (!name) return;
  setText($("#d-name"), name);
  renderDetail();
  loadLedger();
  loadJobs();
  if (focus) $("#detail-h").focus();
}

function renderDetail() {
  const s = current();
  if (!s) return;
  const facts = [
    ["Agent", s.agent || "?"], ["Account", s.account_label || s.account || "—"], ["State", s.state],
    ["Paused", pausedWords(s) || "no"], ["Pane", `${s.pane} (${s.location || "?"})`],
    ["Worktree", s.worktree || "—"], ["Branch", s.branch || "—"], ["Mission", s.mission || "—"],
    ["Next action", inWords(s.next_action) || "—"], ["Banner", s.banner || "—"],
  ];
  const dl = $("#d-facts");
  const key = JSON.stringify(facts);
  if (dl.dataset.key === key) return;
  dl.dataset.key = key;
  dl.replaceChildren(...facts.flatMap(([k, v]) => {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    dd.textContent = neutral(v);
    return [dt, dd];
  }));
}

async function loadLedger() {
  const name = view.selected;
  if (!name) return;
  let data;
  try {
    data = await api("GET", `/api/sessions/${encodeURIComponent(name)}/ledger`);
  } catch (err) {
    notify(explain(err), "bad");
    return;
  }
  if (name !== view.selected) return;
  view.ledgerCount = data.entries.length;
  const key = JSON.stringify(data);
  const table = $("#ledger");
  if (table.dataset.key === key) return;
  table.dataset.key = key;
  $("#ledger tbody").replaceChildren(...data.entries.map((e) => {
    const tr = document.createElement("tr");
    const how = e.automatic ? "automatic" : "asked by you";
    for (const v of [localTime(e.at, true), e.from, e.to, e.head_sha.slice(0, 12), e.reason, how]) {
      const td = document.createElement("td");
      td.textContent = neutral(v);
      tr.appendChild(td);
    }
    tr.cells[3].className = "mono";
    tr.cells[3].title = e.head_sha;
    return labelled($("#ledger"), tr);
  }));
  $("#ledger-empty").hidden = data.entries.length > 0;
  $("#ranges").replaceChildren(...data.ranges.map((r) => {
    const li = document.createElement("li");
    const code = document.createElement("code");
    code.textContent = r.range.replace(/[0-9a-f]{40}/g, (sha) => sha.slice(0, 12));
    code.title = `git log --oneline ${r.range}`;
    li.append(`${r.agent} wrote `, code, r.handed_to ? `, then handed to ${r.handed_to}` : " (working now)");
    return li;
  }));
}

async function loadJobs() {
  let data;
  try {
    data = await api("GET", "/api/jobs");
  } catch (err) {
    notify(explain(err), "bad");
    return;
  }
  view.jobs = data.jobs || [];
  renderJobs();
}

function renderJobs() {
  const name = view.selected;
  const mine = view.jobs.filter((j) => j.owner === name);
  $("#jobs tbody").replaceChildren(...mine.map((j) => {
    const tr = document.createElement("tr");
    tr.dataset.job = j.name;
    for (const v of [j.name, j.title, j.agent, j.status, j.branch || "—"]) {
      const td = document.createElement("td");
      td.textContent = neutral(v);
      tr.appendChild(td);
    }
    return labelled($("#jobs"), tr);
  }));
  $("#jobs-empty").hidden = mine.length > 0;
  const form = $("#jobs-form");
  const top = mine.filter((j) => !j.parent);
  form.hidden = top.length === 0;
  if (form.hidden) return;
  const others = (view.status ? view.status.sessions : []).filter((s) => s.name !== name && !["gone", "exited"].includes(s.state));
  const to = $("#jobs-to");
  const chosen = to.value;
  to.replaceChildren(...others.map((s) => new Option(`${s.name} (${s.agent || "?"}, ${s.state})`, s.name)));
  if (chosen) to.value = chosen;
  const pick = $("#jobs-pick");
  const ticked = new Set([...pick.querySelectorAll("input:checked")].map((i) => i.value));
  pick.replaceChildren(...top.map((j) => {
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.value = j.name;
    box.checked = ticked.size === 0 || ticked.has(j.name);
    label.append(box, ` ${j.name}`);
    return label;
  }));
}

async function resumeNow() {
  const name = view.selected;
  const button = $("#resume");
  button.disabled = true;
  try {
    const r = await api("POST", `/api/sessions/${encodeURIComponent(name)}/resume`);
    notify(`Resuming ${name} (attempt ${r.attempt}); the events below follow it.`, "ok");
  } catch (err) {
    notify(explain(err), "bad");
  } finally {
    button.disabled = false;
  }
}

async function handJobs(ev) {
  ev.preventDefault();
  const picked = [...$("#jobs-pick").querySelectorAll("input:checked")].map((i) => i.value);
  const body = { from: view.selected, to: $("#jobs-to").value, jobs: picked.length ? picked : "all" };
  const note = $("#jobs-note").value.trim();
  if (note) body.note = note;
  try {
    const r = await api("POST", "/api/jobs/handoff", body);
    notify(`Handed ${r.jobs.length} job(s) to ${r.to}: ${r.jobs.join(", ")} (receipt ${r.receipt}).`, "ok");
    $("#jobs-note").value = "";
    loadJobs();
  } catch (err) {
    notify(explain(err), "bad");
  }
}

// --- the handoff picker ------------------------------------------------------------------

let targets = null;

function renderTargets() {
  const force = $("#force").checked;
  const box = $("#targets");
  const chosen = box.querySelector("input:checked");
  box.replaceChildren(...targets.targets.map((t) => {
    const row = document.createElement("div");
    const usable = t.eligible || (force && t.forceable);
    row.className = `target ${usable ? "yes" : "no"}`;
    const input = document.createElement("input");
    input.type = "radio";
    input.name = "target";
    input.value = t.agent;
    input.id = `target-${t.agent}`;
    input.disabled = !usable;
    const label = document.createElement("label");
    label.htmlFor = input.id;
    label.textContent = neutral(t.agent);
    row.append(input, label);
    if (t.why) {
      const why = document.createElement("span");
      why.className = "why";
      why.id = `why-${t.agent}`;
      why.textContent = usable ? `at its limit: ${inWords(t.why)}` : inWords(t.why);
      input.setAttribute("aria-describedby", why.id);
      row.appendChild(why);
    }
    return row;
  }));
  const keep = chosen && box.querySelector(`input[value="${CSS.escape(chosen.value)}"]:not(:disabled)`);
  const first = keep || box.querySelector("input:not(:disabled)");
  if (first) first.checked = true;
  $("#handoff-go").disabled = !first;
  $("#brief").required = targets.brief_required;
  setText($("#brief-need"), targets.brief_required ? "(required: the session has no mission)" : "(optional: the mission is used)");
}

async function openHandoff() {
  const name = view.selected;
  const dialog = $("#handoff-dialog");
  setText($("#h-name"), name);
  $("#targets").replaceChildren(Object.assign(document.createElement("p"), { className: "muted", textContent: "Asking afd…" }));
  $("#handoff-answer").textContent = "";
  $("#force").checked = false;
  $("#brief").value = "";
  $("#handoff-go").disabled = true;
  dialog.showModal();
  try {
    targets = await api("GET", `/api/sessions/${encodeURIComponent(name)}/targets`);
  } catch (err) {
    answer(explain(err), "bad");
    return;
  }
  renderTargets();
  const first = $("#targets input:not(:disabled)");
  (first || $("#handoff-cancel")).focus();
}

function answer(text, kind) {
  const p = $("#handoff-answer");
  p.textContent = text;
  p.className = `answer ${kind || ""}`;
}

async function handOff(ev) {
  ev.preventDefault();
  const picked = $("#targets input:checked");
  if (!picked) return;
  const name = view.selected;
  const body = { to: picked.value, force: $("#force").checked };
  const brief = $("#brief").value.trim();
  if (brief) body.brief = brief;
  const go = $("#handoff-go");
  go.disabled = true;
  answer(`Handing ${name} to ${picked.value}… (afd stops the agent, confirms it is gone, starts ${picked.value})`);
  try {
    const r = await api("POST", `/api/sessions/${encodeURIComponent(name)}/handoff`, body);
    $("#handoff-dialog").close();
    notify(`${name}: ${r.outcome || "handed off"}`, "ok");
    refreshSoon();
    loadLedger();
  } catch (err) {
    answer(explain(err), "bad");
    go.disabled = false;
  }
}

// --- keeping up to date ---------------------------------------------------------------------

let refreshTimer = null;
let refreshing = false;

async function refresh() {
  refreshTimer = null;
  if (refreshing) { refreshSoon(); return; }
  refreshing = true;
  try {
    const first = view.status === null;
    view.status = await api("GET", "/api/status");
    renderDaemon();
    renderSessions();
    renderAgents();
    renderUsage();
    renderFleet(await api("GET", "/api/fleet"));
    if (first) {
      renderEvents(view.status.events || []);
      const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
      if (wanted && view.status.sessions.some((s) => s.name === wanted)) select(wanted, false);
    }
    if (view.selected) {
      renderDetail();
      const s = current();
      if (s && s.handoffs !== view.ledgerCount && view.ledgerCount !== -1) loadLedger();
    }
  } catch (err) {
    notify(explain(err), "bad");
  } finally {
    refreshing = false;
  }
}

function refreshSoon() {
  if (refreshTimer === null) refreshTimer = setTimeout(refresh, REFRESH_GAP);
}

// The event stream: a streamed fetch, since EventSource cannot send the Authorization header.
// The server speaks server-sent events; each "data:" block is one event.
async function follow() {
  const live = $("#live");
  if (loggedOut) return;
  let response;
  try {
    response = await fetch("/api/events", { headers: headers(), credentials: "omit", cache: "no-store" });
  } catch (err) {
    response = null;
  }
  if (response && response.status === 401) { logOut(); notify(explain(new ApiError(401, "")), "bad"); return; }
  if (!response || !response.ok || !response.body) {
    live.textContent = "offline";
    live.className = "live off";
    setTimeout(follow, 3000);
    return;
  }
  live.textContent = "live";
  live.className = "live on";
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
        if (data) received(data);
      }
    }
  } catch (err) {
    // the connection broke: said below, and tried again
  }
  live.textContent = "reconnecting…";
  live.className = "live off";
  setTimeout(follow, 2000);
}

function received(data) {
  let e;
  try { e = JSON.parse(data); } catch (err) { return; }
  if (e.id && e.id <= view.lastEventId) return;
  view.lastEventId = e.id || view.lastEventId;
  addEvent(e);
  refreshSoon();
  if (e.session && e.session === view.selected) {
    loadLedger();
    if (e.kind.startsWith("job")) loadJobs();
  }
}

async function start() {
  for (const b of document.querySelectorAll("#filters button")) {
    b.addEventListener("click", () => {
      view.filter = b.dataset.filter;
      for (const o of document.querySelectorAll("#filters button")) o.setAttribute("aria-pressed", String(o === b));
      if (view.status) renderSessions();
    });
  }
  $("#resume").addEventListener("click", resumeNow);
  $("#handoff-open").addEventListener("click", openHandoff);
  $("#handoff-cancel").addEventListener("click", () => $("#handoff-dialog").close());
  $("#handoff-form").addEventListener("submit", handOff);
  $("#force").addEventListener("change", () => targets && renderTargets());
  $("#jobs-form").addEventListener("submit", handJobs);
  $("#d-close").addEventListener("click", () => { const name = view.selected; select(null); focusRow(name); });
  $("#handoff-dialog").addEventListener("close", () => $("#handoff-open").focus());
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape" && !$("#handoff-dialog").open && view.selected) {
      const name = view.selected;
      select(null);
      focusRow(name);
    }
  });
  // A login address opened in a tab already showing the page changes only the fragment, which loads
  // nothing: the page starts over, to log in with it (after a restart of afd, say, or in a logged-out tab).
  window.addEventListener("hashchange", () => {
    if (new URLSearchParams(location.hash.slice(1)).has("token")) location.reload();
  });
  if (!(await logIn())) {
    logOut();
    notify(explain(new ApiError(401, "")), "bad");
    return;
  }
  refresh();
  follow();
  setInterval(tick, 1000);
  setInterval(() => { if (!loggedOut) refreshSoon(); }, STATUS_EVERY);
}

function focusRow(name) {
  const tr = name && view.rows.get(name);
  if (tr) tr.querySelector("button").focus();
}

start();
