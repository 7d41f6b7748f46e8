// The Sokoban state-space explorer: draws a level's push graph on a canvas (layers by
// distance to goal, or a force layout), shows a state's board and arcs, steps along the
// optimal solution. Plain JavaScript, no dependencies; the data comes from
// robocell/sokoban/graph_view.py. SokobanExplorer.mount(element, data) returns the view.
'use strict';

const SokobanExplorer = (() => {
  const DIRS = 'udlr';
  const LAYER_GAP = 90;
  const ROW_GAP = 16;
  const BAND_GAP = 60;
  const MANY_ARCS = 20000;
  const COLOURS = {
    arc: 'rgba(90, 100, 120, 0.35)', deadArc: 'rgba(200, 80, 70, 0.30)',
    live: '#4a6fa5', dead: '#d9786c', goal: '#2e9d4f', start: '#e0a100',
    solution: '#8e44ad', selected: '#111', inArc: '#1f78d1', outArc: '#ef7d00',
    tail: '#9b2c20',
  };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function svgEl(tag, attrs) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }

  // ---------------------------------------------------------------- the graph as arrays
  function buildModel(data) {
    const st = data.states;
    const n = st.id.length;
    const nb = data.board.n_boxes;
    const nSquares = data.board.squares.length;
    const src = data.arcs.source, dst = data.arcs.target;
    const outStart = new Int32Array(n + 1), inStart = new Int32Array(n + 1);
    for (let a = 0; a < src.length; a++) { outStart[src[a] + 1]++; inStart[dst[a] + 1]++; }
    for (let s = 0; s < n; s++) { outStart[s + 1] += outStart[s]; inStart[s + 1] += inStart[s]; }
    const outArcs = new Int32Array(src.length), inArcs = new Int32Array(src.length);
    const o = outStart.slice(0, n), i = inStart.slice(0, n);
    for (let a = 0; a < src.length; a++) { outArcs[o[src[a]]++] = a; inArcs[i[dst[a]]++] = a; }
    const F = data.flags;
    const flags = st.flags;
    const has = (s, name) => (flags[s] & F[name]) !== 0;
    return { data, n, nb, nSquares, src, dst, outStart, inStart, outArcs, inArcs, has,
             nbr: data.board.neighbours };
  }

  function boxesOf(m, s) {
    return m.data.states.boxes.slice(s * m.nb, (s + 1) * m.nb);
  }

  // Squares the player reaches from the state's region without pushing.
  function reach(m, s) {
    const occupied = new Uint8Array(m.nSquares);
    for (const b of boxesOf(m, s)) occupied[b] = 1;
    const seen = new Uint8Array(m.nSquares);
    const start = m.data.states.player[s];
    const queue = [start];
    seen[start] = 1;
    for (let h = 0; h < queue.length; h++) {
      const q = queue[h];
      for (let d = 0; d < 4; d++) {
        const t = m.nbr[q * 4 + d];
        if (t >= 0 && !seen[t] && !occupied[t]) { seen[t] = 1; queue.push(t); }
      }
    }
    return seen;
  }

  // The shortest walk (lower case) from the region's smallest square to the square behind
  // the box, then the push (upper case): the arc's move string, as graph.arc_label has it.
  function arcMoves(m, a) {
    const s = m.src[a];
    const push = m.data.arcs.push[a];
    const box = Math.floor(push / 4), d = push % 4;
    const behind = m.nbr[box * 4 + (d ^ 1)];
    const start = m.data.states.player[s];
    let walk = '';
    if (start !== behind) {
      const occupied = new Uint8Array(m.nSquares);
      for (const b of boxesOf(m, s)) occupied[b] = 1;
      const cameFrom = new Int32Array(m.nSquares).fill(-1), cameDir = new Int8Array(m.nSquares);
      cameFrom[start] = start;
      const queue = [start];
      search: for (let h = 0; h < queue.length; h++) {
        const q = queue[h];
        for (let k = 0; k < 4; k++) {
          const t = m.nbr[q * 4 + k];
          if (t < 0 || cameFrom[t] >= 0 || occupied[t]) continue;
          cameFrom[t] = q; cameDir[t] = k;
          if (t === behind) break search;
          queue.push(t);
        }
      }
      const path = [];
      for (let t = behind; t !== start; t = cameFrom[t]) path.push(DIRS[cameDir[t]]);
      walk = path.reverse().join('');
    }
    return walk + DIRS[d].toUpperCase();
  }

  // The level as XSB text in this state, the player on ``player`` (Board.render's drawing).
  function xsb(m, s, player) {
    const b = m.data.board;
    const grid = b.rows.map((row) => row.split(''));
    b.squares.forEach(([r, c], q) => { grid[r][c] = ' '; });
    for (const g of b.goals) { const [r, c] = b.squares[g]; grid[r][c] = '.'; }
    const goal = new Uint8Array(m.nSquares);
    for (const g of b.goals) goal[g] = 1;
    for (const q of boxesOf(m, s)) { const [r, c] = b.squares[q]; grid[r][c] = goal[q] ? '*' : '$'; }
    const [pr, pc] = b.squares[player];
    grid[pr][pc] = goal[player] ? '+' : '@';
    return grid.map((row) => row.join('').replace(/\s+$/, '')).join('\n');
  }

  // Where the player stands in state s: on ``given`` when the push that led here is known
  // (the square the pushed box stood on), on its start square in the start, else where the
  // first push into s (in arc order) left it. The state itself only knows the player's
  // region; its smallest square is the player's spot only when nothing better is known.
  function standingSquare(m, s, given) {
    if (given >= 0) return given;
    if (m.has(s, 'start')) return m.data.board.start_player;
    if (m.inStart[s + 1] > m.inStart[s]) return pushedBox(m, m.inArcs[m.inStart[s]]);
    return m.data.states.player[s];
  }

  function pushedBox(m, a) {
    return Math.floor(m.data.arcs.push[a] / 4);
  }

  function bestNextArc(m, s) {
    const dist = m.data.states.distance;
    if (dist[s] <= 0) return -1;
    for (let k = m.outStart[s]; k < m.outStart[s + 1]; k++) {
      const a = m.outArcs[k];
      if (dist[m.dst[a]] === dist[s] - 1) return a;
    }
    return -1;
  }

  // ---------------------------------------------------------------- layouts
  // Layers: live states in columns by distance to goal (start side left, goals right),
  // ordered in each column by the mean height of their predecessors; dead states in a band
  // below, in columns by their distance from the start.
  function layeredLayout(m) {
    const st = m.data.states;
    const x = new Float64Array(m.n), y = new Float64Array(m.n);
    const maxDist = st.distance.reduce((a, b) => Math.max(a, b), 0);
    const live = [], dead = [];
    for (let s = 0; s < m.n; s++) (st.distance[s] >= 0 ? live : dead).push(s);
    const column = (s) => (st.distance[s] >= 0 ? maxDist - st.distance[s] : st.from_start[s]);
    const place = (states, top) => {
      const cols = new Map();
      for (const s of states) {
        const c = column(s);
        if (!cols.has(c)) cols.set(c, []);
        cols.get(c).push(s);
      }
      const placed = new Uint8Array(m.n);
      let tallest = 0;
      for (const c of [...cols.keys()].sort((p, q) => p - q)) {
        const members = cols.get(c);
        const key = new Map();
        for (const s of members) {
          let sum = 0, count = 0;
          for (let k = m.inStart[s]; k < m.inStart[s + 1]; k++) {
            const p = m.src[m.inArcs[k]];
            if (placed[p]) { sum += y[p]; count++; }
          }
          key.set(s, count ? sum / count : Infinity);
        }
        members.sort((p, q) => (key.get(p) - key.get(q)) || (p - q));
        members.forEach((s, row) => {
          x[s] = c * LAYER_GAP;
          y[s] = top + (row - (members.length - 1) / 2) * ROW_GAP;
          placed[s] = 1;
        });
        tallest = Math.max(tallest, members.length);
      }
      return tallest * ROW_GAP;
    };
    const liveHeight = place(live, 0);
    if (dead.length) {
      const deadHeight = dead.length ? place(dead, 0) : 0;
      const shift = liveHeight / 2 + BAND_GAP + deadHeight / 2;
      for (const s of dead) y[s] += shift;
    }
    return { x, y };
  }

  // Force layout: springs along arcs, repulsion from the states in neighbouring cells of a
  // grid (a crowded cell repels as one weight at its centre, so a step stays near linear),
  // run a few milliseconds per frame so the page stays responsive.
  function forceLayout(m, visible, start, onFrame) {
    const x = Float64Array.from(start.x), y = Float64Array.from(start.y);
    const idx = [];
    for (let s = 0; s < m.n; s++) if (visible[s]) idx.push(s);
    const nv = idx.length;
    const L = 40, CROWDED = 12, MAX_CELLS_PER_SIDE = 256;
    const iterations = nv > 5000 ? 80 : 200;
    let iteration = 0, temperature = L * 2;
    const dx = new Float64Array(m.n), dy = new Float64Array(m.n);
    const cellOf = new Int32Array(nv), members = new Int32Array(nv);
    const job = { cancelled: false };
    const step = () => {
      dx.fill(0); dy.fill(0);
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
      for (const s of idx) {
        x0 = Math.min(x0, x[s]); x1 = Math.max(x1, x[s]);
        y0 = Math.min(y0, y[s]); y1 = Math.max(y1, y[s]);
      }
      const size = Math.max(2 * L, (x1 - x0) / MAX_CELLS_PER_SIDE, (y1 - y0) / MAX_CELLS_PER_SIDE);
      const W = Math.floor((x1 - x0) / size) + 1, H = Math.floor((y1 - y0) / size) + 1;
      const first = new Int32Array(W * H + 1), cx = new Float64Array(W * H), cy = new Float64Array(W * H);
      for (let i = 0; i < nv; i++) {
        const s = idx[i];
        const c = Math.floor((x[s] - x0) / size) * H + Math.floor((y[s] - y0) / size);
        cellOf[i] = c; first[c + 1]++; cx[c] += x[s]; cy[c] += y[s];
      }
      for (let c = 0; c < W * H; c++) {
        const count = first[c + 1];
        if (count) { cx[c] /= count; cy[c] /= count; }
        first[c + 1] += first[c];
      }
      const fill = first.slice(0, W * H);
      for (let i = 0; i < nv; i++) members[fill[cellOf[i]]++] = idx[i];
      const push = (s, ox, oy, weight) => {
        let ex = x[s] - ox, ey = y[s] - oy;
        let d2 = ex * ex + ey * ey;
        if (d2 > 4 * size * size) return;
        if (d2 < 0.01) { ex = Math.random() - 0.5; ey = Math.random() - 0.5; d2 = 0.5; }
        const f = weight * (L * L) / d2;
        dx[s] += ex * f; dy[s] += ey * f;
      };
      for (let i = 0; i < nv; i++) {
        const s = idx[i];
        const gx = Math.floor(cellOf[i] / H), gy = cellOf[i] % H;
        for (let a = Math.max(0, gx - 1); a <= Math.min(W - 1, gx + 1); a++) {
          for (let b = Math.max(0, gy - 1); b <= Math.min(H - 1, gy + 1); b++) {
            const c = a * H + b, count = first[c + 1] - first[c];
            if (count > CROWDED && c !== cellOf[i]) { push(s, cx[c], cy[c], count); continue; }
            for (let k = first[c]; k < first[c + 1] && k - first[c] < 4 * CROWDED; k++) {
              if (members[k] !== s) push(s, x[members[k]], y[members[k]], 1);
            }
          }
        }
      }
      for (let a = 0; a < m.src.length; a++) {
        const s = m.src[a], t = m.dst[a];
        if (!visible[s] || !visible[t] || s === t) continue;
        const ex = x[s] - x[t], ey = y[s] - y[t];
        const d = Math.sqrt(ex * ex + ey * ey) + 1e-6;
        const f = d / L;
        dx[s] -= ex * f; dy[s] -= ey * f; dx[t] += ex * f; dy[t] += ey * f;
      }
      for (const s of idx) {
        const d = Math.sqrt(dx[s] * dx[s] + dy[s] * dy[s]) + 1e-6;
        const move = Math.min(d, temperature);
        x[s] += (dx[s] / d) * move; y[s] += (dy[s] / d) * move;
      }
      temperature = Math.max(1, temperature * 0.97);
      iteration++;
    };
    const frame = () => {
      if (job.cancelled) return;
      const until = performance.now() + 12;
      while (iteration < iterations && performance.now() < until) step();
      onFrame({ x, y }, iteration >= iterations);
      if (iteration < iterations) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    return job;
  }

  // ---------------------------------------------------------------- the page
  function mount(root, data) {
    const m = buildModel(data);
    const st = data.states;
    const summary = data.summary;
    root.textContent = '';
    root.classList.add('sx');
    const view = {
      model: m, layoutName: 'layers', showDead: false, selected: 0, hovered: -1, step: 0,
      standing: -1,
      scale: 1, tx: 0, ty: 0, pos: null, layered: null, forceJob: null, ready: false,
    };
    const solution = data.solution.states;

    // toolbar
    const bar = el('div', { class: 'sx-toolbar' });
    const title = el('span', { class: 'sx-title' }, data.level);
    const layersBtn = el('button', { 'data-role': 'layout-layers', 'aria-pressed': 'true' },
                         'Layers');
    const forceBtn = el('button', { 'data-role': 'layout-force', 'aria-pressed': 'false' },
                        'Force');
    const deadBox = el('input', { type: 'checkbox', 'data-role': 'show-dead' });
    const deadLabel = el('label', {}, ' dead states');
    deadLabel.prepend(deadBox);
    const nDeadDrawn = st.flags.filter((f) => f & data.flags.dead).length;
    if (!nDeadDrawn) { deadBox.disabled = true; deadLabel.title = 'no dead state is drawn'; }
    const firstBtn = el('button', { 'data-role': 'step-first', title: 'back to the start (Home)' }, 'Start');
    const prevBtn = el('button', { 'data-role': 'step-prev', title: 'previous push (←)' }, '◀');
    const nextBtn = el('button', { 'data-role': 'step-next', title: 'next push (→)' }, '▶');
    const lastBtn = el('button', { 'data-role': 'step-last', title: 'on to the goal (End)' }, 'Goal');
    const stepText = el('span', { 'data-role': 'step-text', class: 'sx-step' });
    const bestBtn = el('button', { 'data-role': 'best-push', title: 'best next push (b)' },
                       'Best push');
    const fitBtn = el('button', { 'data-role': 'fit', title: 'fit to view (f)' }, 'Fit');
    bar.append(title, el('span', { class: 'sx-sep' }, 'Layout'), layersBtn, forceBtn, deadLabel,
               el('span', { class: 'sx-sep' }, 'Solution'), firstBtn, prevBtn, nextBtn, lastBtn,
               stepText, bestBtn, fitBtn);
    root.append(bar);
    const notice = el('div', { class: 'sx-notice', 'data-role': 'notice' });
    if (data.reduced) notice.textContent = data.reduced.message; else notice.hidden = true;
    root.append(notice);

    const main = el('div', { class: 'sx-main' });
    const wrap = el('div', { class: 'sx-canvas-wrap' });
    const canvas = el('canvas', { class: 'sx-canvas', 'data-role': 'graph', tabindex: '0' });
    wrap.append(canvas);
    const side = el('div', { class: 'sx-side' });
    main.append(wrap, side);
    root.append(main);

    // summary panel
    const sumBox = el('section', { class: 'sx-summary', 'data-role': 'summary' });
    sumBox.append(el('h3', {}, 'Summary'));
    const table = el('table');
    const rows = [
      ['states', 'states'], ['arcs', 'arcs'], ['dead_states', 'dead states'],
      ['live_states', 'live states'], ['live_arcs', 'live arcs'],
      ['goal_states', 'goal states'], ['diameter', 'diameter (live)'],
      ['max_distance_to_goal', 'farthest from goal'],
      ['solution_pushes', 'solution pushes'],
      ['solution_moves', 'solution moves (push-optimal, fewest moves)'],
      ['branching', 'branching (arcs/state)'], ['live_branching', 'live branching'],
      ['largest_scc', 'largest SCC'], ['largest_live_scc', 'largest live SCC'],
    ];
    for (const [key, label] of rows) {
      const value = summary[key];
      const tr = el('tr', { 'data-key': key });
      if (key === 'solution_moves') {
        tr.title = 'the moves of the solution drawn: of all push-optimal solutions, one with ' +
                   'the fewest moves (`sokoban solve` prints a push-optimal one, which may ' +
                   'take more moves; `--metric moves` the fewest moves of all)';
      }
      tr.append(el('th', {}, label),
                el('td', {}, value === null || value === undefined ? 'n/a' : String(value)));
      table.append(tr);
    }
    sumBox.append(table);
    sumBox.append(el('p', { class: 'sx-drawn', 'data-role': 'drawn' },
                     `${m.n} states and ${m.src.length} arcs drawn`));
    side.append(sumBox);

    // state panel
    const info = el('section', { class: 'sx-state', 'data-role': 'state' });
    side.append(info);
    const legend = el('section', { class: 'sx-legend' });
    for (const [kind, label] of [['start', 'start'], ['goal', 'goal'], ['solution', 'solution'],
                                 ['live', 'live'], ['dead', 'dead'], ['tail', 'tail'],
                                 ['dead-end', 'dead end']]) {
      const item = el('span', {});
      item.append(el('i', { class: 'sx-key sx-key-' + kind }), label);
      legend.append(item);
    }
    side.append(legend);

    // ---------------------------------------------------------------- drawing
    const ctx = canvas.getContext('2d');
    let frameRequested = false;
    const visible = () => {
      const v = new Uint8Array(m.n);
      for (let s = 0; s < m.n; s++) v[s] = view.showDead || st.distance[s] >= 0 ? 1 : 0;
      // a reduced view without live states still shows what it has
      if (!v.some((x) => x)) v.fill(1);
      return v;
    };
    let shown = visible();

    function resize() {
      const r = wrap.getBoundingClientRect();
      const ratio = window.devicePixelRatio || 1;
      canvas.width = Math.max(1, Math.round(r.width * ratio));
      canvas.height = Math.max(1, Math.round(r.height * ratio));
      canvas.style.width = r.width + 'px';
      canvas.style.height = r.height + 'px';
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      redraw();
    }

    function fit() {
      const r = wrap.getBoundingClientRect();
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
      for (let s = 0; s < m.n; s++) {
        if (!shown[s]) continue;
        x0 = Math.min(x0, view.pos.x[s]); x1 = Math.max(x1, view.pos.x[s]);
        y0 = Math.min(y0, view.pos.y[s]); y1 = Math.max(y1, view.pos.y[s]);
      }
      if (x0 === Infinity) { x0 = x1 = y0 = y1 = 0; }
      const pad = 30;
      view.scale = Math.min(4, (r.width - 2 * pad) / Math.max(1, x1 - x0),
                            (r.height - 2 * pad) / Math.max(1, y1 - y0));
      view.tx = r.width / 2 - view.scale * (x0 + x1) / 2;
      view.ty = r.height / 2 - view.scale * (y0 + y1) / 2;
      redraw();
    }

    const sx = (s) => view.pos.x[s] * view.scale + view.tx;
    const sy = (s) => view.pos.y[s] * view.scale + view.ty;

    function redraw() {
      if (frameRequested) return;
      frameRequested = true;
      requestAnimationFrame(draw);
    }

    function draw() {
      frameRequested = false;
      const w = canvas.clientWidth, h = canvas.clientHeight;
      ctx.clearRect(0, 0, w, h);
      if (!view.pos) return;
      const radius = Math.max(2, Math.min(7, 5 * view.scale));
      // arcs: live ones, then those into dead states (drawn only when dead states are);
      // left out while a large force layout settles, so its frames stay short
      const skipArcs = view.settling && m.src.length > MANY_ARCS;
      for (const deadPass of skipArcs ? [] : [false, true]) {
        ctx.beginPath();
        for (let a = 0; a < m.src.length; a++) {
          const s = m.src[a], t = m.dst[a];
          if (!shown[s] || !shown[t] || (st.distance[t] < 0) !== deadPass) continue;
          ctx.moveTo(sx(s), sy(s));
          ctx.lineTo(sx(t), sy(t));
        }
        ctx.strokeStyle = deadPass ? COLOURS.deadArc : COLOURS.arc;
        ctx.lineWidth = 1;
        ctx.stroke();
      }
      // solution path
      if (solution.length > 1) {
        ctx.beginPath();
        ctx.moveTo(sx(solution[0]), sy(solution[0]));
        for (const s of solution.slice(1)) ctx.lineTo(sx(s), sy(s));
        ctx.strokeStyle = COLOURS.solution;
        ctx.lineWidth = 3;
        ctx.stroke();
      }
      // arcs of the selected state
      const sel = view.selected;
      const arcSet = (startArr, arcArr, colour) => {
        ctx.beginPath();
        for (let k = startArr[sel]; k < startArr[sel + 1]; k++) {
          const a = arcArr[k];
          if (!shown[m.src[a]] || !shown[m.dst[a]]) continue;
          ctx.moveTo(sx(m.src[a]), sy(m.src[a]));
          ctx.lineTo(sx(m.dst[a]), sy(m.dst[a]));
        }
        ctx.strokeStyle = colour;
        ctx.lineWidth = 2;
        ctx.stroke();
      };
      if (sel >= 0) { arcSet(m.inStart, m.inArcs, COLOURS.inArc); arcSet(m.outStart, m.outArcs, COLOURS.outArc); }
      // states, one path per colour
      const groups = new Map();
      for (let s = 0; s < m.n; s++) {
        if (!shown[s]) continue;
        let colour = st.distance[s] >= 0 ? COLOURS.live : COLOURS.dead;
        if (m.has(s, 'solution')) colour = COLOURS.solution;
        if (m.has(s, 'goal')) colour = COLOURS.goal;
        if (m.has(s, 'start')) colour = COLOURS.start;
        if (!groups.has(colour)) groups.set(colour, []);
        groups.get(colour).push(s);
      }
      for (const [colour, states] of groups) {
        ctx.beginPath();
        for (const s of states) {
          const r = m.has(s, 'start') || m.has(s, 'goal') ? radius * 1.6 : radius;
          ctx.moveTo(sx(s) + r, sy(s));
          ctx.arc(sx(s), sy(s), r, 0, 2 * Math.PI);
        }
        ctx.fillStyle = colour;
        ctx.fill();
      }
      // tails ringed, dead ends crossed
      ctx.beginPath();
      const ends = new Path2D();
      for (let s = 0; s < m.n; s++) {
        if (!shown[s]) continue;
        if (m.has(s, 'tail')) { ctx.moveTo(sx(s) + radius + 2, sy(s)); ctx.arc(sx(s), sy(s), radius + 2, 0, 2 * Math.PI); }
        if (m.has(s, 'dead_end')) {
          const r = radius + 2;
          ends.moveTo(sx(s) - r, sy(s) - r); ends.lineTo(sx(s) + r, sy(s) + r);
          ends.moveTo(sx(s) + r, sy(s) - r); ends.lineTo(sx(s) - r, sy(s) + r);
        }
      }
      ctx.strokeStyle = COLOURS.tail;
      ctx.lineWidth = 1.2;
      ctx.stroke();
      ctx.stroke(ends);
      // selected and hovered
      for (const [s, colour] of [[view.hovered, '#888'], [sel, COLOURS.selected]]) {
        if (s < 0 || !shown[s]) continue;
        ctx.beginPath();
        ctx.arc(sx(s), sy(s), radius * 1.6 + 4, 0, 2 * Math.PI);
        ctx.strokeStyle = colour;
        ctx.lineWidth = 2;
        ctx.stroke();
      }
    }

    // ---------------------------------------------------------------- the state panel
    function drawBoard(s, role = 'board', widthPx = 300, player = standingSquare(m, s, -1)) {
      const b = data.board;
      const size = Math.max(role === 'board' ? 12 : 6,
                            Math.min(28, Math.floor(widthPx / Math.max(b.width, b.height))));
      const svg = svgEl('svg', { width: b.width * size, height: b.height * size,
                                 viewBox: `0 0 ${b.width * size} ${b.height * size}`,
                                 class: 'sx-board', 'data-role': role,
                                 'data-state': String(st.id[s]), 'data-player': String(player),
                                 'data-xsb': xsb(m, s, player) });
      const reachable = reach(m, s);
      b.rows.forEach((row, r) => {
        for (let c = 0; c < row.length; c++) {
          if (row[c] === '#') svg.append(svgEl('rect', { x: c * size, y: r * size, width: size, height: size, class: 'wall' }));
          if (row[c] === '*') svg.append(svgEl('rect', { x: c * size + 2, y: r * size + 2, width: size - 4, height: size - 4, class: 'box fixed' }));
        }
      });
      b.squares.forEach(([r, c], q) => {
        svg.append(svgEl('rect', { x: c * size, y: r * size, width: size, height: size,
                                   class: reachable[q] ? 'floor reach' : 'floor' }));
      });
      for (const g of b.goals) {
        const [r, c] = b.squares[g];
        svg.append(svgEl('circle', { cx: (c + 0.5) * size, cy: (r + 0.5) * size, r: size * 0.18, class: 'goal' }));
      }
      const goal = new Set(b.goals);
      for (const q of boxesOf(m, s)) {
        const [r, c] = b.squares[q];
        svg.append(svgEl('rect', { x: c * size + 2, y: r * size + 2, width: size - 4, height: size - 4,
                                   rx: 3, class: goal.has(q) ? 'box on-goal' : 'box' }));
      }
      const [pr, pc] = b.squares[player];
      svg.append(svgEl('circle', { cx: (pc + 0.5) * size, cy: (pr + 0.5) * size, r: size * 0.32, class: 'player' }));
      return svg;
    }

    function arcList(titleText, role, startArr, arcArr, other) {
      const box = el('div', { class: 'sx-arcs', 'data-role': role });
      const count = startArr[view.selected + 1] - startArr[view.selected];
      box.append(el('h4', {}, `${titleText} (${count})`));
      const list = el('ul');
      const limit = 60;
      for (let k = startArr[view.selected]; k < startArr[view.selected + 1] && k - startArr[view.selected] < limit; k++) {
        const a = arcArr[k];
        const t = other(a);
        const li = el('li', { 'data-state': String(st.id[t]) });
        const moves = el('code', {}, arcMoves(m, a));
        const d = st.distance[t];
        li.append(moves, document.createTextNode(` ${role === 'in-arcs' ? 'from' : 'to'} #${st.id[t]} (${d >= 0 ? d + ' to goal' : 'dead'})`));
        li.addEventListener('click', () => select(t, role === 'out-arcs' ? pushedBox(m, a) : -1));
        list.append(li);
      }
      if (count > limit) list.append(el('li', {}, `... ${count - limit} more`));
      box.append(list);
      return box;
    }

    function showState() {
      const s = view.selected;
      info.textContent = '';
      if (s < 0) return;
      const d = st.distance[s];
      const marks = Object.keys(data.flags).filter((k) => m.has(s, k)).map((k) => k.replace('_', ' '));
      info.append(el('h3', {}, `State #${st.id[s]}`));
      info.append(el('p', { 'data-role': 'distance', 'data-distance': String(d) },
                     d >= 0 ? `${d} push${d === 1 ? '' : 'es'} to goal` : 'dead: no goal can be reached'));
      if (marks.length) info.append(el('p', { class: 'sx-marks' }, marks.join(', ')));
      info.append(drawBoard(s, 'board', 300, view.standing));
      const best = bestNextArc(m, s);
      const bestText = el('p', { 'data-role': 'best', class: 'sx-best' });
      if (best >= 0) {
        bestText.append('best next push: ', el('code', {}, arcMoves(m, best)), ` to #${st.id[m.dst[best]]}`);
      } else {
        bestText.textContent = d === 0 ? 'solved: a goal state' : 'no push leads towards a goal';
      }
      info.append(bestText);
      info.append(arcList('Out-arcs', 'out-arcs', m.outStart, m.outArcs, (a) => m.dst[a]));
      info.append(arcList('In-arcs', 'in-arcs', m.inStart, m.inArcs, (a) => m.src[a]));
    }

    function showStep() {
      const n = Math.max(0, solution.length - 1);
      if (!solution.length) { stepText.textContent = 'no solution: the start is dead'; return; }
      const moves = view.step > 0 ? data.solution.steps[view.step - 1] : '';
      stepText.textContent = `push ${view.step} of ${n}` + (moves ? ` (${moves})` : '');
      stepText.dataset.step = String(view.step);
    }

    // select state s; ``standOn``: the player's square when the push that led there is known
    function select(s, standOn = -1) {
      view.selected = s;
      view.standing = s >= 0 ? standingSquare(m, s, standOn) : -1;
      if (s >= 0 && !shown[s]) { view.showDead = true; deadBox.checked = true; shown = visible(); }
      const onPath = solution.indexOf(s);
      if (onPath >= 0) view.step = onPath;
      showState();
      showStep();
      redraw();
    }

    function goStep(k) {
      if (!solution.length) return;
      view.step = Math.max(0, Math.min(solution.length - 1, k));
      const pushes = data.solution.pushes;
      select(solution[view.step], view.step > 0 ? Math.floor(pushes[view.step - 1] / 4) : -1);
    }

    function takeBest() {
      const a = bestNextArc(m, view.selected);
      if (a >= 0) select(m.dst[a], pushedBox(m, a));
    }

    // ---------------------------------------------------------------- input
    function stateAt(px, py) {
      let best = -1, bestD = 100;
      for (let s = 0; s < m.n; s++) {
        if (!shown[s]) continue;
        const ex = sx(s) - px, ey = sy(s) - py;
        const d = ex * ex + ey * ey;
        if (d < bestD) { bestD = d; best = s; }
      }
      return best;
    }
    let drag = null;
    canvas.addEventListener('mousedown', (e) => {
      drag = { x: e.offsetX, y: e.offsetY, tx: view.tx, ty: view.ty, moved: false };
    });
    canvas.addEventListener('mousemove', (e) => {
      if (drag) {
        const ex = e.offsetX - drag.x, ey = e.offsetY - drag.y;
        if (Math.abs(ex) + Math.abs(ey) > 3) drag.moved = true;
        view.tx = drag.tx + ex; view.ty = drag.ty + ey;
        redraw();
        return;
      }
      const s = stateAt(e.offsetX, e.offsetY);
      if (s !== view.hovered) { view.hovered = s; redraw(); showHover(s); }
      if (s >= 0) placeHover(e.offsetX, e.offsetY);
    });
    canvas.addEventListener('mouseleave', () => { view.hovered = -1; showHover(-1); redraw(); });

    // the hovered state's board, beside the pointer
    const hoverCard = el('div', { class: 'sx-hover', 'data-role': 'hover' });
    hoverCard.hidden = true;
    wrap.append(hoverCard);
    function showHover(s) {
      hoverCard.hidden = s < 0;
      hoverCard.textContent = '';
      if (s < 0) return;
      const d = st.distance[s];
      hoverCard.append(el('div', {}, `#${st.id[s]}: ${d >= 0 ? d + ' to goal' : 'dead'}`),
                       drawBoard(s, 'hover-board', 140));
    }
    function placeHover(px, py) {
      const r = wrap.getBoundingClientRect();
      const w = hoverCard.offsetWidth, h = hoverCard.offsetHeight;
      hoverCard.style.left = Math.max(0, px + 16 + w > r.width ? px - 16 - w : px + 16) + 'px';
      hoverCard.style.top = Math.max(0, py + 16 + h > r.height ? py - 16 - h : py + 16) + 'px';
    }
    window.addEventListener('mouseup', (e) => {
      if (drag && !drag.moved && e.target === canvas) {
        const s = stateAt(e.offsetX, e.offsetY);
        if (s >= 0) select(s);
      }
      drag = null;
    });
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const k = Math.exp(-e.deltaY * 0.0015);
      view.tx = e.offsetX - (e.offsetX - view.tx) * k;
      view.ty = e.offsetY - (e.offsetY - view.ty) * k;
      view.scale *= k;
      redraw();
    }, { passive: false });
    root.addEventListener('keydown', (e) => {
      if (e.target.tagName === 'INPUT' && e.target.type !== 'checkbox') return;
      const keys = { ArrowRight: () => goStep(view.step + 1), ArrowLeft: () => goStep(view.step - 1),
                     Home: () => goStep(0), End: () => goStep(solution.length - 1),
                     b: takeBest, f: fit };
      if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
    });
    root.tabIndex = 0;
    firstBtn.addEventListener('click', () => goStep(0));
    prevBtn.addEventListener('click', () => goStep(view.step - 1));
    nextBtn.addEventListener('click', () => goStep(view.step + 1));
    lastBtn.addEventListener('click', () => goStep(solution.length - 1));
    bestBtn.addEventListener('click', takeBest);
    fitBtn.addEventListener('click', fit);
    deadBox.addEventListener('change', () => {
      view.showDead = deadBox.checked;
      shown = visible();
      if (view.layoutName === 'force') setLayout('force'); else fit();
    });

    function setLayout(name) {
      view.layoutName = name;
      layersBtn.setAttribute('aria-pressed', String(name === 'layers'));
      forceBtn.setAttribute('aria-pressed', String(name === 'force'));
      if (view.forceJob) view.forceJob.cancelled = true;
      view.settling = false;
      root.dataset.layout = name;
      if (name === 'layers') {
        view.pos = view.layered;
        root.dataset.layoutDone = 'true';
        fit();
        return;
      }
      root.dataset.layoutDone = 'false';
      let first = true;
      view.settling = true;
      view.forceJob = forceLayout(m, shown, view.layered, (pos, done) => {
        view.pos = pos;
        view.settling = !done;
        if (first || done) fit(); else redraw();
        first = false;
        if (done) root.dataset.layoutDone = 'true';
      });
    }
    layersBtn.addEventListener('click', () => setLayout('layers'));
    forceBtn.addEventListener('click', () => setLayout('force'));

    view.layered = layeredLayout(m);
    view.pos = view.layered;
    if (typeof ResizeObserver !== 'undefined') new ResizeObserver(resize).observe(wrap);
    resize();
    fit();
    select(solution.length ? solution[0] : 0);
    root.dataset.layout = 'layers';
    root.dataset.layoutDone = 'true';
    root.dataset.ready = 'true';

    // what tests and scripts use: screen position of a state, selection by id
    const api = {
      view,
      select,
      goStep,
      setLayout,
      localIndex: (id) => st.id.indexOf(id),
      screenPosition(s) {
        const r = canvas.getBoundingClientRect();
        return { x: r.left + sx(s), y: r.top + sy(s) };
      },
      arcMoves: (a) => arcMoves(m, a),
      xsb: (s) => xsb(m, s, standingSquare(m, s, -1)),
    };
    root.explorer = api;
    return api;
  }

  return { mount };
})();

if (typeof window !== 'undefined') window.SokobanExplorer = SokobanExplorer;
