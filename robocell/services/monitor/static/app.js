// The dashboard page: one WebSocket to the monitor, views redrawn once per animation frame,
// control buttons only after the monitor accepted the token.
"use strict";

(() => {
  const STAGES = ["scanning", "solving", "executing", "verifying", "done"];
  const STAGE_COLOURS = {
    scanning: "#4aa3df", solving: "#b07cd8", executing: "#e8a33d", verifying: "#5cb85c",
  };
  const ACTION_LABELS = {
    scramble: "Scramble (sim)", start: "Start cycle", pause: "Pause", resume: "Resume",
    estop: "E-STOP",
  };
  const RECONNECT_MAX_MS = 5000;
  const TOKEN_KEY = "robocell-monitor-token";

  const $ = (id) => document.getElementById(id);
  const views = {};
  const dirty = new Set();
  let hello = null;
  let socket = null;
  let reconnectMs = 250;
  let frameRequested = false;
  let controlSeq = 0;

  // --- connection ---------------------------------------------------------------------------

  function takeTokenFromUrl() {
    const match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    socket = new WebSocket(`${proto}//${location.host}/ws`);
    setConn("connecting");
    socket.onopen = () => { reconnectMs = 250; setConn("open"); };
    socket.onmessage = (event) => onMessage(JSON.parse(event.data));
    socket.onclose = () => {
      setConn("disconnected");
      setAuthorised(false);
      setTimeout(connect, reconnectMs);
      reconnectMs = Math.min(RECONNECT_MAX_MS, reconnectMs * 2);
    };
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  // the badge: the page's socket to the monitor, then the monitor's link to the broker
  let socketState = "connecting";
  function setConn(state) {
    socketState = state;
    const el = $("conn");
    const broker = views.link ? views.link.broker : "connecting";
    let shown = state;
    if (state === "open") shown = broker === "present" ? "live" : broker === "absent" ? "no broker" : "connecting";
    el.dataset.state = shown === "no broker" ? "nobroker" : shown;
    el.textContent = shown;
    el.title = shown === "no broker" ? views.link.problem : "connection to the monitor and its broker";
  }

  function onMessage(msg) {
    if (msg.type === "hello") {
      hello = msg;
      $("where").textContent = `bus ${msg.broker}${msg.remote ? " (remote, CURVE)" : ""}`;
      $("token-form").hidden = !msg.control_available;
      $("readonly").textContent = msg.control_available ? "read-only" : "read-only (control off)";
      const token = takeTokenFromUrl();
      if (token && msg.control_available) send({ type: "auth", token });
    } else if (msg.type === "update") {
      for (const [name, value] of Object.entries(msg.views)) {
        views[name] = value;
        dirty.add(name);
      }
      if ("link" in msg.views) setConn(socketState);
      if (!frameRequested) {
        frameRequested = true;
        requestAnimationFrame(render);
      }
    } else if (msg.type === "auth") {
      if (!msg.authorised) sessionStorage.removeItem(TOKEN_KEY);
      setAuthorised(msg.authorised);
      logControl(msg.authorised ? "ok" : "error", msg.message);
    } else if (msg.type === "control_reply") {
      for (const r of msg.replies) {
        logControl(r.ok ? "ok" : "error",
          `${msg.action} → ${r.service}.${r.command}: ` +
          (r.ok ? "ok" : `${r.error}: ${r.message}`));
      }
    } else if (msg.type === "error") {
      logControl("error", msg.message);
    }
  }

  // --- control ------------------------------------------------------------------------------

  function setAuthorised(authorised) {
    const control = $("control");
    control.dataset.authorised = String(authorised);
    $("readonly").hidden = authorised;
    $("token-form").hidden = authorised || !(hello && hello.control_available);
    const buttons = $("control-buttons");
    buttons.textContent = "";  // no control elements exist without the token
    if (!authorised || !hello) return;
    for (const action of hello.actions) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.action = action;
      b.className = action === "estop" ? "estop" : "";
      b.textContent = ACTION_LABELS[action] || action;
      b.addEventListener("click", () => {
        const id = `c${++controlSeq}`;
        send({ type: "control", id, action, args: {} });
        logControl("pending", `${action} sent`);
      });
      buttons.appendChild(b);
    }
  }

  function logControl(kind, text) {
    const log = $("control-log");
    log.hidden = false;
    const line = document.createElement("div");
    line.className = `log-${kind}`;
    line.textContent = `${new Date().toLocaleTimeString([], { hour12: false })}  ${text}`;
    log.prepend(line);
    while (log.childElementCount > 6) log.lastElementChild.remove();
  }

  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token-input").value;
    $("token-input").value = "";
    sessionStorage.setItem(TOKEN_KEY, token);
    send({ type: "auth", token });
  });

  // --- rendering ----------------------------------------------------------------------------

  function render() {
    frameRequested = false;
    const names = [...dirty];
    dirty.clear();
    for (const name of names) {
      const draw = name.startsWith("face.") ? drawFaces : RENDERERS[name];
      if (draw) draw(views[name], name);
    }
  }

  const RENDERERS = {
    services: drawServices, bus: drawBus, monitor: drawMonitor, cube: drawCube,
    twin: drawTwin, scan: drawScan, plan: drawPlan, progress: drawPlan, actuator: drawPlan,
    cell: drawCell, cycles: drawCycles, errors: drawErrors, sokoban: drawSokoban,
  };

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k.startsWith("data-")) e.dataset[k.slice(5)] = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  function ago(seconds) {
    if (seconds < 1) return "now";
    if (seconds < 60) return `${seconds.toFixed(0)} s ago`;
    return `${(seconds / 60).toFixed(0)} min ago`;
  }

  function clock(t) {
    return t ? new Date(t * 1000).toLocaleTimeString([], { hour12: false }) : "";
  }

  function healthSummary(health) {
    const parts = [];
    for (const [k, v] of Object.entries(health || {})) {
      if (k === "bus" && v && typeof v === "object") {
        parts.push(`rx ${v.received}` + (v.dropped ? `, dropped ${v.dropped}` : ""));
      } else if (v === null || typeof v !== "object") {
        parts.push(`${k} ${v}`);
      }
    }
    return parts.join(" · ");
  }

  // The state space of the level the solver last solved: fetched once per level, drawn by
  // the explorer of robocell.sokoban (/sokoban/explorer.js).
  let sokobanLevel = null;
  function drawSokoban(view) {
    const status = $("sokoban-status");
    if (!view || view.unavailable) {
      status.textContent = view ? view.unavailable : "no Sokoban level solved yet";
      return;
    }
    $("sokoban-meta").textContent = (view.solved ? `${view.pushes} pushes, ${view.moves} moves`
      : view.status) + (view.solved && view.optimal ? `, ${view.metric}-optimal` : "");
    if (view.level === sokobanLevel) return;
    sokobanLevel = view.level;
    status.textContent = "building the state space ...";
    fetch("/api/sokoban/graph").then(async (response) => {
      const body = await response.json();
      if (view.level !== sokobanLevel) return;  // a newer level came meanwhile
      if (!response.ok) { status.textContent = body.error; return; }
      status.textContent = "";
      const box = $("sokoban-explorer");
      box.classList.add("sx-embedded");
      window.SokobanExplorer.mount(box, body);
    }).catch((err) => {
      status.textContent = `cannot load the state space: ${err}`;
      sokobanLevel = null;
    });
  }

  function drawServices(list) {
    const body = $("services").tBodies[0];
    body.textContent = "";
    // a service on another host than the broker's (a remote solver) says where it runs
    const brokerHost = ((list || []).find((s) => s.service === "broker") || {}).host;
    for (const s of list || []) {
      const state = s.stale ? "stale" : s.state;
      const row = el("tr", { "data-service": s.service, "data-stale": String(s.stale),
                             "data-state": s.state, class: s.stale ? "stale" : "" },
        el("td", { title: `pid ${s.pid} on ${s.host}, up ${Math.round(s.uptime_s)} s, commands: ${s.commands.join(", ")}` +
                          ((s.instances || []).length ? `\ninstances: ${s.instances.map((i) => `pid ${i.pid} on ${i.host}${i.key ? ` (CURVE key ${i.key})` : ""} (${i.outstanding} in flight)`).join("; ")}` : "") },
          el("b", {}, s.service),
          brokerHost && s.host && s.host !== brokerHost ? el("span", { class: "host muted", "data-host": s.host }, ` @${s.host}`) : "",
          (s.instances || []).length > 1 ? el("span", { class: "instances", "data-instances": String(s.instances.length) }, ` ×${s.instances.length}`) : ""),
        el("td", {}, el("span", { class: `state state-${state}` }, s.stale ? `STALE (was ${s.state})` : s.state)),
        el("td", { class: "health" }, healthSummary(s.health)),
        el("td", {}, ago(s.age_s)));
      body.append(row);
    }
    if (!body.childElementCount) body.append(el("tr", {}, el("td", { colspan: 4, class: "muted" }, "no heartbeats yet")));
  }

  function drawBus(stats) {
    const body = $("topics").tBodies[0];
    body.textContent = "";
    if (!stats) return;
    $("bus-meta").textContent = `${stats.messages} messages, ${stats.gaps} lost before the broker` +
      (Object.keys(stats.rejected || {}).length ? `, rejected ${JSON.stringify(stats.rejected)}` : "");
    for (const [topic, t] of Object.entries(stats.topics || {})) {
      body.append(el("tr", { "data-topic": topic, class: t.gaps ? "drops" : "" },
        el("td", {}, topic), el("td", {}, t.kind || ""),
        el("td", { class: "num" }, `${Number(t.rate_hz || 0).toFixed(1)} Hz`),
        el("td", { class: "num" }, t.messages), el("td", { class: "num" }, t.gaps || 0),
        el("td", {}, (t.publishers || []).join(", "))));
    }
  }

  function drawMonitor(m) {
    if (!m) return;
    const replay = m.replay || {};
    $("replay").hidden = !replay.active;
    $("replay").textContent = `replay on the bus: ${replay.messages} recorded messages shown, marked "replayed"`;
    const rate = Object.values(m.topics).reduce((a, t) => a + t.rate_hz, 0);
    const rx = m.receive || {};
    $("monitor-stats").textContent =
      `this monitor: ${m.ingested} messages in (${rate.toFixed(0)}/s), ${m.views_sent} view updates out ` +
      `(coalesced ${m.views_sent ? (m.ingested / m.views_sent).toFixed(1) : "-"}:1), ` +
      `dropped ${rx.dropped || 0}, rejected ${JSON.stringify(rx.rejected || {})}`;
  }

  function drawCube(state) {
    CubeView.drawNet($("cube-net"), state && state.facelets, state && state.confidence);
    CubeView.draw3d($("cube-3d"), state && state.facelets);
    const doubtful = state && (state.confidence || []).some((c) => c < CubeView.DOUBTFUL);
    $("cube-legend").hidden = !doubtful;
    $("cube-meta").textContent = state ? `${state.puzzle} · scan ${state.scan_id}` : "";
    $("cube-source").textContent = state ? clock(state.wall_time || state.time) : "";
  }

  function drawTwin(twin) {
    $("twin-figure").hidden = !twin;
    if (!twin) return;
    CubeView.drawNet($("twin-net"), twin.facelets, null);
    CubeView.draw3d($("twin-3d"), twin.facelets);
    const grips = Object.entries(twin.grips || {}).map(([k, v]) => `${k}:${v}`).join(" ");
    $("twin-meta").textContent = (twin.solved ? "solved" : "not solved") +
      (twin.fault ? ` · FAULT ${twin.fault}` : "") + (grips ? ` · ${grips}` : "");
    $("twin-meta").className = twin.fault ? "bad" : (twin.solved ? "good" : "");
  }

  function drawScan(scan) {
    $("scan-meta").textContent = scan ? `scan ${scan.scan_id}: pose ${scan.pose + 1} of ${scan.n_poses}, face ${scan.face} in view` : "";
  }

  function drawFaces() {
    const host = $("faces");
    host.textContent = "";
    for (const face of CubeView.FACE_ORDER) {
      const v = views[`face.${face}`];
      const tile = el("figure", { class: "face", "data-face": face, "data-ok": v ? String(v.ok) : "" });
      tile.append(el("figcaption", {}, `${face}`, v ? el("small", {}, v.ok ? ` pose ${v.pose}` : ` ✗ ${v.error || ""}`) : ""));
      if (v) {
        const box = el("div", { class: "thumb" });
        const img = el("img", { alt: `face ${face}`, src: `data:image/jpeg;base64,${v.jpeg}` });
        box.append(img);
        img.addEventListener("load", () => box.append(gridOverlay(v, img.naturalWidth, img.naturalHeight)));
        tile.append(box);
      } else {
        tile.append(el("div", { class: "thumb empty" }, "waiting"));
      }
      host.append(tile);
    }
  }

  function gridOverlay(v, width, height) {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("class", "grid-overlay");
    const n = v.size;
    const radius = Math.max(3, Math.min(width, height) / (n * 7));
    const line = (points) => {
      const p = document.createElementNS(ns, "polyline");
      p.setAttribute("points", points.map((q) => q.join(",")).join(" "));
      p.setAttribute("class", "grid-line");
      svg.append(p);
    };
    for (let r = 0; r < n; r++) line(v.grid.slice(r * n, r * n + n));
    for (let c = 0; c < n; c++) line(v.grid.filter((_, i) => i % n === c));
    v.grid.forEach(([x, y], i) => {
      const c = document.createElementNS(ns, "circle");
      c.setAttribute("cx", x); c.setAttribute("cy", y); c.setAttribute("r", radius);
      const [r, g, b] = v.colors[i] || [128, 128, 128];
      c.setAttribute("fill", `rgb(${r},${g},${b})`);
      c.setAttribute("class", (v.confidence[i] ?? 1) < CubeView.DOUBTFUL ? "sample doubtful" : "sample");
      svg.append(c);
    });
    return svg;
  }

  function drawPlan() {
    const plan = views.plan, progress = views.progress, result = views.actuator;
    const list = $("plan-steps");
    if (!plan) {
      list.textContent = "";
      list.dataset.planId = "";
      $("plan-meta").textContent = ""; $("progress-text").textContent = "";
      $("plan-timing").textContent = "";
      return;
    }
    $("plan-meta").textContent = `${plan.puzzle} · ${plan.profile} · ${plan.primitives.length} primitives · predicted ${(plan.predicted_ms / 1000).toFixed(2)} s`;
    const current = progress && progress.plan_id === plan.plan_id ? progress : null;
    const done = result && result.plan_id === plan.plan_id ? result : null;
    const steps = plan.primitives.join(" ");  // a plan's rest may be replaced while it runs
    if (list.dataset.planId !== plan.plan_id || list.dataset.steps !== steps) {
      list.textContent = "";
      list.dataset.planId = plan.plan_id;
      list.dataset.steps = steps;
      plan.primitives.forEach((p, i) => list.append(el("li", { "data-step": i }, p)));
    }
    [...list.children].forEach((li, i) => {
      let cls = "";
      if (done) cls = i < done.executed ? "done" : "";
      else if (current) cls = i < current.step ? "done" : (i === current.step ? "current" : "");
      if (li.className !== cls) li.className = cls;
    });
    let fraction = 0, text = "waiting for execution";
    if (done) {
      fraction = done.n_steps ? done.executed / done.n_steps : 1;
      text = done.ok ? `executed ${done.executed}/${done.n_steps} in ${done.duration_s.toFixed(2)} s`
        : `stopped at ${done.executed}/${done.n_steps}: ${done.error || ""}`;
    } else if (current) {
      fraction = current.n_steps ? current.step / current.n_steps : 0;
      text = `${current.state}: step ${current.step + 1} of ${current.n_steps} (${current.primitive}) · ETA ${current.eta_s.toFixed(1)} s`;
    }
    drawRobotTime(plan, done);
    $("progress-bar").style.width = `${(100 * fraction).toFixed(1)}%`;
    $("progress-bar").className = done && !done.ok ? "bad" : "";
    $("progress-text").textContent = text;
    const s = plan.search || {};
    $("plan-search").textContent = `face turns: ${plan.face_turns.join(" ")}` +
      (Object.keys(s).length ? ` · search ${Object.entries(s).map(([k, v]) => `${k} ${v}`).join(", ")}` : "");
    const cur = list.querySelector(".current");
    if (cur) cur.scrollIntoView({ block: "nearest" });
  }

  // A cycle whose measured robot time is this far off its prediction (in percent of the
  // measured time) is flagged by the cell (robocell.services.cell.history.ERROR_FLAG).
  const PREDICTION_FLAG_PCT = 10;

  function drawRobotTime(plan, done) {
    // the plan's predicted robot time, and once it ran, the robot's measured motion time
    const line = $("plan-timing"), seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;
    const measured = done ? done.measured_ms : null;
    if (!measured) {  // absent, null (not finished, a protocol-1 firmware) or nothing moved
      line.textContent = `robot time: predicted ${seconds(plan.predicted_ms)} · measured ` +
        (done ? "not reported" : "after execution");
      line.dataset.off = "";
      return;
    }
    const error = 100 * (measured - plan.predicted_ms) / measured;
    const off = Math.abs(error) > PREDICTION_FLAG_PCT;
    line.textContent = `robot time: predicted ${seconds(plan.predicted_ms)} · measured ` +
      `${seconds(measured)} · error ${error >= 0 ? "+" : ""}${error.toFixed(1)} %` +
      (off ? " · the profile no longer matches the robot: run robocell calibrate" : "");
    line.dataset.off = off ? "true" : "false";
  }

  function drawCell(status) {
    const badge = $("cell-stage");
    badge.dataset.stage = status ? status.stage : "";
    badge.textContent = status ? `cycle ${status.cycle_id}: ${status.stage}` +
      (status.replayed ? " (replayed)" : "") : "no cycle";
    badge.dataset.replayed = status && status.replayed ? "true" : "false";
    $("cell-detail").textContent = status && status.detail ? status.detail : "";
    const pipe = $("pipeline");
    pipe.textContent = "";
    const at = status ? STAGES.indexOf(status.stage) : -1;
    for (const [i, stage] of STAGES.entries()) {
      let cls = i < at ? "done" : (i === at ? "current" : "");
      if (status && (status.stage === "failed" || status.stage === "stopped") && i === 0) cls = "";
      pipe.append(el("li", { class: cls }, stage));
    }
    if (status && (status.stage === "failed" || status.stage === "stopped")) {
      pipe.append(el("li", { class: "failed" }, status.stage));
    }
  }

  function drawCycles(cycles) {
    const body = $("cycles").tBodies[0];
    body.textContent = "";
    for (const c of cycles || []) {
      const bar = el("div", { class: "stagebar" });
      const total = c.total_s || 1;
      for (const [stage, seconds] of Object.entries(c.stages_s || {})) {
        const part = el("span", { title: `${stage} ${seconds.toFixed(2)} s` }, `${stage[0]} ${seconds.toFixed(1)}`);
        part.style.flexGrow = String(Math.max(seconds / total, 0.02));
        part.style.background = STAGE_COLOURS[stage] || "#888";
        bar.append(part);
      }
      body.append(el("tr", { class: c.ok ? "" : "failed" },
        el("td", { title: `finished ${clock(c.time)}` }, c.cycle_id),
        el("td", { class: "why", title: c.ok ? "" : c.error || "" },
          c.ok ? "✓ solved" : `✗ ${c.failed_stage || ""}: ${c.error || ""}`),
        el("td", {}, bar), el("td", { class: "num" }, `${c.total_s.toFixed(2)} s`)));
    }
  }

  function drawErrors(errors) {
    const list = $("errors");
    list.textContent = "";
    for (const e of errors || []) {
      list.append(el("li", { class: `level-${e.level}` },
        el("span", { class: "muted" }, `${clock(e.time)} ${e.service} · ${e.stage} · ${e.code}`),
        el("div", {}, e.message), e.action ? el("div", { class: "action" }, `→ ${e.action}`) : ""));
    }
    if (!list.childElementCount) list.append(el("li", { class: "muted" }, "none"));
  }

  connect();
})();
