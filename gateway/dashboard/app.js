// sluice's dashboard: polls /api/v1/overview every second and draws it.
// Every value from the server goes into the page as text (textContent),
// never as markup: client ids, counted values and details are data.
"use strict";

const closeShare = 0.8; // from this share of its limit on, a caller is "close"
const tokenKey = "sluice-admin-token"; // sessionStorage: kept for this tab only
const kinds = {
  retries_too_soon: "Retries too soon",
  limit_too_low: "Limit too low",
  shared_address: "Shared address",
  separate_counters: "Separate counters",
};

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function pct(x) { return Math.round(Math.max(0, Math.min(1, x || 0)) * 100) + "%"; }

function callerState(t) {
  if ((t.retry_s || 0) > 0 || (t.used || 0) >= 1) return "limited";
  if ((t.used || 0) >= closeShare) return "close";
  return "ok";
}

function seconds(s) {
  if (s === undefined || s === null || s <= 0) return "";
  if (s < 120 && s % 60 !== 0) return s + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  return Math.round(s / 3600) + " h";
}

// chart draws series (each {values, color}) over the same x as a small SVG.
function chart(series, max) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  const n = Math.max(2, ...series.map(s => s.values.length));
  const top = Math.max(1, max || 0, ...series.flatMap(s => s.values));
  svg.setAttribute("viewBox", `0 0 ${n - 1} 100`);
  svg.setAttribute("preserveAspectRatio", "none");
  for (const s of series) {
    const p = document.createElementNS(ns, "polyline");
    p.setAttribute("points", s.values.map((v, i) => `${i},${100 - (v / top) * 96}`).join(" "));
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", s.color);
    p.setAttribute("stroke-width", "2");
    p.setAttribute("vector-effect", "non-scaling-stroke");
    svg.append(p);
  }
  return svg;
}

function legend(items) {
  const l = el("div", { class: "legend" });
  for (const [name, color] of items) {
    const i = el("i"); i.style.background = color;
    l.append(i, name);
  }
  return l;
}

function drawFindings(findings) {
  const ul = document.getElementById("findings");
  ul.replaceChildren();
  if (!findings || findings.length === 0) {
    ul.append(el("li", { class: "none" }, "No typical mistake seen."));
    return;
  }
  for (const f of findings) {
    ul.append(el("li", { "data-kind": f.kind }, el("span", { class: "kind" }, (kinds[f.kind] || f.kind) + ": "), f.detail || ""));
  }
}

function drawRule(r, history) {
  const box = el("div", { class: "rule", "data-rule": r.name });
  const limit = r.window_s ? `${r.limit} per ${seconds(r.window_s)}` : `${r.limit}`;
  box.append(el("h3", {}, r.name),
    el("div", { class: "meta" }, `${r.algorithm || ""} · ${limit} · key ${r.key || ""} · ${r.mode || ""} · last minute: ${r.allowed || 0} allowed, ${r.limited || 0} limited`));
  const allowed = history.map(h => ((h.rules || {})[r.name] || {}).allowed || 0);
  const limited = history.map(h => ((h.rules || {})[r.name] || {}).limited || 0);
  if (history.length > 1) {
    const c = el("div", { class: "chart" });
    c.append(chart([{ values: allowed, color: "#2f7d4f" }, { values: limited, color: "#c0392b" }]));
    box.append(c, legend([["allowed per second", "#2f7d4f"], ["limited per second", "#c0392b"]]));
  }
  const top = r.top || [];
  if (top.length === 0) {
    box.append(el("p", { class: "muted" }, "No caller counted yet."));
    return box;
  }
  const tbody = el("tbody");
  for (const t of top) {
    const state = callerState(t);
    const bar = el("div", { class: "use " + state }, el("span"), el("b", {}, pct(t.used)));
    bar.firstChild.style.width = pct(t.used);
    tbody.append(el("tr", { class: state, "data-client": t.client, "data-state": state },
      el("td", { class: "who" }, t.client + (state === "limited" ? " (limited)" : state === "close" ? " (close)" : "") +
        ((t.source || "").startsWith("override:") ? " · override" : "")),
      el("td", { class: "counted" }, t.counted || ""),
      el("td", {}, bar),
      el("td", { class: "num allowed" }, t.allowed || 0),
      el("td", { class: "num" }, t.limited || 0),
      el("td", { class: "num" }, seconds(t.retry_s))));
  }
  box.append(el("table", { class: "callers" },
    el("thead", {}, el("tr", {}, el("th", {}, "caller"), el("th", { class: "counted" }, "counted as"),
      el("th", {}, "share of limit used"), el("th", { class: "num allowed" }, "allowed/min"),
      el("th", { class: "num" }, "limited/min"), el("th", { class: "num" }, "retry in"))),
    tbody));
  return box;
}

function drawProtect(p, history) {
  const box = document.getElementById("protect-box");
  if (!p) { box.hidden = true; return; }
  box.hidden = false;
  const shed = Object.entries(p.shed || {}).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(", ");
  document.getElementById("protect-now").textContent =
    `in flight ${p.in_flight} of limit ${p.limit} (ceiling ${p.ceiling}); queued ${p.queued || 0}` +
    (p.queue_max ? ` of ${p.queue_max}` : "") + (shed ? `; shed: ${shed}` : "");
  const c = document.getElementById("protect-chart");
  c.replaceChildren();
  if (history.length > 1) {
    c.append(chart([
      { values: history.map(h => h.in_flight || 0), color: "#1f5fa8" },
      { values: history.map(h => h.limit || 0), color: "#c98a00" },
      { values: history.map(h => h.ceiling || 0), color: "#c0392b" }]),
      legend([["in flight", "#1f5fa8"], ["limit", "#c98a00"], ["ceiling", "#c0392b"]]));
  }
}

function drawStore(s, instances) {
  s = s || {};
  document.getElementById("store").textContent =
    `${s.type || "?"} store, ${s.state || "?"}, on_failure ${s.on_failure || "?"}` + (s.note ? ` — ${s.note}` : "");
  const tbody = document.querySelector("#instances tbody");
  tbody.replaceChildren();
  for (const i of instances || []) {
    tbody.append(el("tr", {}, el("td", {}, i.id + (i.self ? " (this one)" : "")), el("td", {}, i.version || ""),
      el("td", {}, i.runtime_version || 0), el("td", {}, i.self ? "now" : (i.seen_s || 0) + " s ago")));
  }
}

// The incident controls: every write goes to the admin API under the
// token, after the operator confirms it; the answer (or the problem's
// detail) is shown under the forms.

function authHeaders() {
  const h = {};
  const token = sessionStorage.getItem(tokenKey);
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

async function api(method, path, body) {
  const init = { method, headers: authHeaders(), cache: "no-store" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  return { ok: res.ok, status: res.status, data };
}

function showResult(text, ok) {
  const p = document.getElementById("steer-result");
  p.textContent = text;
  p.className = ok ? "ok" : "bad";
}

function ends(e) {
  if (!e.expires) return "when removed";
  return "in " + (seconds(Math.ceil(e.expires_in_s || 0)) || "0 s");
}

function what(e) {
  if (e.block) return "blocked (403)";
  return "rate " + e.rate + (e.burst ? " burst " + e.burst : "");
}

let ruleNames = "";

function drawRuntime(rt, rules) {
  rt = rt || {};
  const status = `run-time version ${rt.version || 0}, kept in ${rt.backend || "?"}` +
    (rt.stale ? ` — STALE: the store cannot be read (${rt.error || ""}); the last overrides read stay in force` : "");
  const st = document.getElementById("runtime-status");
  st.textContent = status;
  st.className = rt.stale ? "bad" : "muted";
  const d = rt.degrade || {};
  const now = document.getElementById("degrade-now");
  now.replaceChildren(d.on
    ? el("p", { class: "bad", id: "degrade-state", "data-on": "true" }, `Degraded: degrade rules refused and low priority shed on every instance, ${ends(d)} (${d.reason || ""}, by ${d.author || "?"})`)
    : el("p", { class: "muted", id: "degrade-state", "data-on": "false" }, "Not degraded."));
  const button = document.getElementById("degrade-button");
  button.textContent = d.on ? "Stop degrading" : "Degrade every instance";
  button.dataset.on = d.on ? "true" : "false";
  const tbody = document.querySelector("#overrides tbody");
  tbody.replaceChildren();
  for (const e of rt.overrides || []) {
    const remove = el("button", { type: "button", class: "remove" }, "Remove");
    remove.addEventListener("click", () => removeOverride(e));
    tbody.append(el("tr", { "data-target": e.target, "data-rule": e.rule || "" }, el("td", {}, e.target), el("td", {}, e.rule || "every rule"),
      el("td", {}, what(e)), el("td", {}, ends(e)), el("td", {}, e.reason || ""), el("td", {}, e.author || ""), el("td", {}, remove)));
  }
  if ((rt.overrides || []).length === 0) tbody.append(el("tr", {}, el("td", { colspan: "7", class: "muted" }, "None: every limit is the configuration's.")));
  for (const i of rt.ignored || []) tbody.append(el("tr", { class: "bad" }, el("td", { colspan: "7" }, "left out: " + i)));
  const names = rules.map(r => r.name).join("\n");
  if (names !== ruleNames) { // keep the operator's choice while the page refreshes
    ruleNames = names;
    const sel = document.querySelector("#override-form select[name=rule]");
    sel.replaceChildren(...rules.map(r => el("option", { value: r.name }, r.name)));
  }
}

// drawPressure says whether sluice degrades now and why: the switch, the
// signals above their line; and each signal's last value.
function drawPressure(d, signals) {
  d = d || {};
  const ul = document.getElementById("signals");
  ul.replaceChildren();
  if (d.on && (d.sources || []).some(s => s !== "switch")) {
    ul.append(el("li", { class: "bad" }, "Degraded by " + d.sources.join(", ")));
  }
  for (const s of signals || []) {
    const value = s.value === null || s.value === undefined ? "not read yet" : s.value;
    const state = s.stale ? `stale (${s.error || "unreadable"}): counts as not above` : s.on ? "above its line: degrading" : "below its line";
    ul.append(el("li", { class: s.on ? "bad" : s.stale ? "close" : "muted", "data-signal": s.name }, `signal ${s.name}: ${value} (line ${s.above}) — ${state}`));
  }
}

function drawAudit(records) {
  const tbody = document.querySelector("#audit tbody");
  tbody.replaceChildren();
  for (const r of records || []) {
    tbody.append(el("tr", { "data-action": r.action }, el("td", {}, new Date(r.time).toLocaleString()), el("td", {}, r.action),
      el("td", {}, (r.target || "") + (r.rule ? " / " + r.rule : "")), el("td", {}, `${r.from} → ${r.to}`),
      el("td", {}, r.author || ""), el("td", {}, r.reason || "")));
  }
  if (!records || records.length === 0) tbody.append(el("tr", {}, el("td", { colspan: "6", class: "muted" }, "No change yet.")));
}

async function refreshAudit() {
  try {
    const r = await api("GET", "/api/v1/audit?limit=20");
    if (r.ok) drawAudit(r.data.records);
  } catch (e) { /* the overview's status says when the admin address is unreachable */ }
}

async function write(method, path, body, done) {
  try {
    const r = await api(method, path, body);
    if (r.ok) showResult(done, true);
    else showResult(`Refused (${r.status}): ${(r.data && r.data.detail) || "no detail"}`, false);
  } catch (e) {
    showResult("Not sent: " + e.message, false);
  }
  refreshAudit();
  clearTimeout(timer);
  poll();
}

function removeOverride(e) {
  const label = e.block ? `the block of ${e.target}` : `the override of ${e.target} on ${e.rule}`;
  if (!confirm(`Remove ${label} on every instance?`)) return;
  const q = new URLSearchParams({ reason: "removed from the dashboard" });
  if (!e.block) q.set("rule", e.rule);
  write("DELETE", "/api/v1/overrides/" + encodeURIComponent(e.target) + "?" + q, undefined, `Removed ${label}.`);
}

document.getElementById("override-form").addEventListener("submit", ev => {
  ev.preventDefault();
  const f = ev.target.elements;
  const target = f.target.value.trim();
  const body = { reason: f.reason.value.trim() };
  if (f.ttl.value.trim()) body.ttl = f.ttl.value.trim();
  let label;
  if (f.kind.value === "block") {
    body.block = true;
    label = `Block ${target} on every rule`;
  } else {
    body.rule = f.rule.value;
    body.rate = f.rate.value.trim();
    if (f.burst.value) body.burst = Number(f.burst.value);
    label = `Set ${target}'s rate on ${body.rule} to ${body.rate}` + (body.burst ? ` burst ${body.burst}` : "");
  }
  label += (body.ttl ? ` for ${body.ttl}` : " until removed") + ", on every instance?";
  if (!confirm(label)) return;
  write("PUT", "/api/v1/overrides/" + encodeURIComponent(target), body, "Applied: " + label.replace(/\?$/, "."));
});

document.getElementById("override-form").elements.kind.addEventListener("change", ev => {
  for (const l of document.querySelectorAll("#override-form .for-override")) l.hidden = ev.target.value === "block";
});

document.getElementById("degrade-form").addEventListener("submit", ev => {
  ev.preventDefault();
  const f = ev.target.elements;
  const on = document.getElementById("degrade-button").dataset.on !== "true";
  const body = { on, reason: f.reason.value.trim() };
  if (on && f.ttl.value.trim()) body.ttl = f.ttl.value.trim();
  const label = on ? "Degrade every instance (degrade rules refused, low priority shed)" + (body.ttl ? ` for ${body.ttl}` : " until stopped") + "?"
    : "Stop degrading every instance?";
  if (!confirm(label)) return;
  write("PUT", "/api/v1/degrade", body, on ? "Degrading every instance." : "Stopped degrading.");
});

setInterval(refreshAudit, 5000);
refreshAudit();

function draw(o) {
  const history = o.history || [];
  document.getElementById("instance").textContent = o.instance ? `instance ${o.instance.id} · configuration ${o.instance.version}` : "";
  drawFindings(o.findings);
  const rules = document.getElementById("rules");
  rules.replaceChildren(...(o.rules || []).map(r => drawRule(r, history)));
  drawProtect(o.protect, history);
  drawStore(o.store, o.instances);
  drawRuntime(o.runtime, o.rules || []);
  drawPressure(o.degraded, o.signals);
  document.getElementById("updated").textContent = "Last update " + new Date().toLocaleTimeString() + ".";
}

function setStatus(text, ok) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = "status " + (ok ? "ok" : "bad");
}

function askToken(message) {
  document.getElementById("view").hidden = true;
  document.getElementById("login").hidden = false;
  const e = document.getElementById("login-error");
  e.hidden = !message;
  e.textContent = message || "";
  setStatus("token needed", false);
}

let timer = null;

async function poll() {
  const headers = {};
  const token = sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = "Bearer " + token;
  try {
    const res = await fetch("/api/v1/overview", { headers, cache: "no-store" });
    if (res.status === 401) {
      sessionStorage.removeItem(tokenKey);
      askToken(token ? "That token was refused." : "");
      return; // polling resumes once a token is given
    }
    if (!res.ok) throw new Error("overview answered " + res.status);
    const o = await res.json();
    document.getElementById("login").hidden = true;
    document.getElementById("view").hidden = false;
    draw(o);
    setStatus("live", true);
  } catch (err) {
    setStatus("not reachable: " + err.message, false);
  }
  timer = setTimeout(poll, 1000);
}

document.getElementById("login").addEventListener("submit", ev => {
  ev.preventDefault();
  sessionStorage.setItem(tokenKey, document.getElementById("token").value);
  document.getElementById("token").value = "";
  clearTimeout(timer);
  poll();
});

poll();
