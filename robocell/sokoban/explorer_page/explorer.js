// The Sokoban state-space explorer: draws a level's push graph with sigma.js (WebGL) over a
// graphology graph, in the layout computed once in Python (robocell/sokoban/layout.py) or in
// layers by distance to the goal; shows a state's board and arcs, steps along the optimal
// solution, and marks what the graph says (strongly connected components, bottlenecks,
// corridors, the dead region) on request. The data comes from
// robocell/sokoban/graph_view.py. SokobanExplorer.mount(element, data) returns the view.
'use strict';

const SokobanExplorer = (() => {
  const DIRS = 'udlr';
  const LAYER_GAP = 90;
  const ROW_GAP = 16;
  const BAND_GAP = 60;
  const MAX_ASPECT = 2;
  const MANY_ARCS = 150000;  // above: arcs are left out while the view moves
  const COLOURS = {
    arc: 'rgba(90, 100, 120, 0.45)', deadArc: 'rgba(200, 80, 70, 0.35)',
    live: '#4a6fa5', dead: '#d9786c', deadMass: 'rgba(217, 120, 108, 0.10)',
    goal: '#2e9d4f', start: '#e0a100', solution: '#8e44ad', selected: '#111',
    inArc: '#1f78d1', outArc: '#ef7d00', tail: '#a8453a', deadEnd: '#5a1a12',
    bottleneck: '#d1007a', corridor: '#16877a', other: '#c9c9c9',
  };
  const SCC_COLOURS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2',
                       '#17becf', '#bcbd22', '#393b79', '#e7969c'];
  const TOGGLES = [
    ['scc', 'SCCs', 'colour the largest strongly connected components (states one can go back and forth between)'],
    ['bottlenecks', 'bottlenecks', 'mark the states and pushes every solution passes through'],
    ['corridors', 'corridors', 'draw each run of states with one way in and one way out as one arc'],
    ['deadMass', 'dead region', 'shade the dead states as one mass (without their arcs) when they are not drawn one by one'],
  ];

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
    // no sliver: the longer side at most MAX_ASPECT times the shorter
    const extent = (a) => a.reduce((r, v) => [Math.min(r[0], v), Math.max(r[1], v)], [Infinity, -Infinity]);
    const [x0, x1] = extent(x), [y0, y1] = extent(y);
    const w = x1 - x0, h = y1 - y0;
    if (w > MAX_ASPECT * h && h > 0) y.forEach((v, s) => { y[s] = v * w / (MAX_ASPECT * h); });
    if (h > MAX_ASPECT * w && w > 0) x.forEach((v, s) => { x[s] = v * h / (MAX_ASPECT * w); });
    // graph coordinates grow upwards, the page's downwards: rows drawn top to bottom
    y.forEach((v, s) => { y[s] = -v; });
    return { x, y };
  }

  // Local arc numbers of the solution path (the arc with the push the solution makes).
  function solutionArcs(m) {
    const sol = m.data.solution;
    const arcs = [];
    for (let k = 1; k < sol.states.length; k++) {
      const s = sol.states[k - 1], t = sol.states[k];
      for (let j = m.outStart[s]; j < m.outStart[s + 1]; j++) {
        const a = m.outArcs[j];
        if (m.dst[a] === t && m.data.arcs.push[a] === sol.pushes[k - 1]) { arcs.push(a); break; }
      }
    }
    return arcs;
  }

  // ---------------------------------------------------------------- the page
  function mount(root, data) {
    const m = buildModel(data);
    const st = data.states;
    const summary = data.summary;
    const nArcs = m.src.length;
    const runs = data.corridors || [];
    root.textContent = '';
    root.classList.add('sx');
    const view = {
      model: m, layoutName: 'force', showDead: false, selected: 0, hovered: -1, step: 0,
      standing: -1, pos: null, layered: null, shaped: null, ready: false,
      scc: false, bottlenecks: false, corridors: false, deadMass: true,
    };
    const solution = data.solution.states;
    const onSolution = new Uint8Array(nArcs);
    for (const a of solutionArcs(m)) onSolution[a] = 1;
    const neckArc = new Uint8Array(nArcs);
    for (const a of data.arcs.bottleneck || []) neckArc[a] = 1;
    const selArc = new Uint8Array(nArcs);  // 1: in-arc of the selected state, 2: out-arc

    // toolbar
    const bar = el('div', { class: 'sx-toolbar' });
    const title = el('span', { class: 'sx-title' }, data.level);
    const forceBtn = el('button', { 'data-role': 'layout-force', 'aria-pressed': 'true',
                                    title: 'the shape of the graph: states placed by their distances in pushes (computed once per level)' },
                        'Shape');
    const layersBtn = el('button', { 'data-role': 'layout-layers', 'aria-pressed': 'false',
                                     title: 'columns by distance to the goal' }, 'Layers');
    const deadBox = el('input', { type: 'checkbox', 'data-role': 'show-dead' });
    const deadLabel = el('label', { title: 'draw the dead states one by one, with their arcs' }, ' dead states');
    deadLabel.prepend(deadBox);
    const nDeadDrawn = st.flags.filter((f) => f & data.flags.dead).length;
    if (!nDeadDrawn) { deadBox.disabled = true; deadLabel.title = 'no dead state is drawn'; }
    const toggleBoxes = {};
    const toggleLabels = TOGGLES.map(([name, text, help]) => {
      const box = el('input', { type: 'checkbox', 'data-role': 'toggle-' + name });
      box.checked = view[name];
      toggleBoxes[name] = box;
      const label = el('label', { title: help }, ' ' + text);
      label.prepend(box);
      return label;
    });
    const firstBtn = el('button', { 'data-role': 'step-first', title: 'back to the start (Home)' }, 'Start');
    const prevBtn = el('button', { 'data-role': 'step-prev', title: 'previous push (←)' }, '◀');
    const nextBtn = el('button', { 'data-role': 'step-next', title: 'next push (→)' }, '▶');
    const lastBtn = el('button', { 'data-role': 'step-last', title: 'on to the goal (End)' }, 'Goal');
    const stepText = el('span', { 'data-role': 'step-text', class: 'sx-step' });
    const bestBtn = el('button', { 'data-role': 'best-push', title: 'best next push (b)' },
                       'Best push');
    const fitBtn = el('button', { 'data-role': 'fit', title: 'fit to view (f)' }, 'Fit');
    bar.append(title, el('span', { class: 'sx-sep' }, 'Layout'), forceBtn, layersBtn, deadLabel,
               el('span', { class: 'sx-sep' }, 'Show'), ...toggleLabels,
               el('span', { class: 'sx-sep' }, 'Solution'), firstBtn, prevBtn, nextBtn, lastBtn,
               stepText, bestBtn, fitBtn);
    root.append(bar);
    const notice = el('div', { class: 'sx-notice', 'data-role': 'notice' });
    if (data.reduced) notice.textContent = data.reduced.message; else notice.hidden = true;
    root.append(notice);

    const main = el('div', { class: 'sx-main' });
    const wrap = el('div', { class: 'sx-canvas-wrap' });
    const massCanvas = el('canvas', { class: 'sx-mass', 'data-role': 'dead-mass' });
    wrap.append(massCanvas);
    const container = el('div', { class: 'sx-canvas', 'data-role': 'graph', tabindex: '0' });
    wrap.append(container);
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
    const nNecks = st.flags.filter((f) => f & data.flags.bottleneck).length;
    sumBox.append(el('p', { class: 'sx-drawn', 'data-role': 'drawn' },
                     `${m.n} states and ${nArcs} arcs drawn; ${nNecks} bottleneck states, ` +
                     `${(data.arcs.bottleneck || []).length} bottleneck pushes, ` +
                     `${runs.length} corridors`));
    side.append(sumBox);

    // state panel
    const info = el('section', { class: 'sx-state', 'data-role': 'state' });
    side.append(info);
    const legend = el('section', { class: 'sx-legend' });
    for (const [kind, label] of [['start', 'start'], ['goal', 'goal'], ['solution', 'solution'],
                                 ['live', 'live'], ['dead', 'dead'], ['tail', 'tail'],
                                 ['dead-end', 'dead end'], ['bottleneck', 'bottleneck'],
                                 ['corridor', 'corridor'], ['mass', 'dead region']]) {
      const item = el('span', {});
      item.append(el('i', { class: 'sx-key sx-key-' + kind }), label);
      legend.append(item);
    }
    side.append(legend);

    // ---------------------------------------------------------------- what is drawn, how
    const isDead = (s) => st.distance[s] < 0;
    const shownState = (s) => {
      if (view.corridors && m.has(s, 'corridor')) return false;
      if (!isDead(s)) return true;
      return view.showDead || view.deadMass || !liveDrawn;
    };
    const asMass = (s) => isDead(s) && !view.showDead && view.deadMass && liveDrawn;
    const liveDrawn = st.distance.some((d) => d >= 0);  // a reduced view may hold none

    function stateStyle(s) {
      if (!shownState(s)) return { hidden: true };
      const base = Math.max(2.5, Math.min(8, 12 - 2.2 * Math.log10(Math.max(10, m.n))));
      if (asMass(s)) return { hidden: true, color: COLOURS.deadMass };  // drawn by the mass layer
      let color = isDead(s) ? COLOURS.dead : COLOURS.live;
      let size = base, zIndex = 1;
      if (view.scc) {
        const rank = st.scc ? st.scc[s] : -1;
        color = rank >= 0 && rank < SCC_COLOURS.length ? SCC_COLOURS[rank] : COLOURS.other;
      } else if (m.has(s, 'dead_end')) {
        color = COLOURS.deadEnd;
      } else if (isDead(s) && m.has(s, 'tail')) {
        color = COLOURS.tail;
      }
      if (m.has(s, 'solution')) { color = COLOURS.solution; zIndex = 2; }
      if (view.bottlenecks && m.has(s, 'bottleneck')) {
        color = COLOURS.bottleneck; size = base * 1.8; zIndex = 3;
      }
      if (m.has(s, 'goal')) { color = COLOURS.goal; size = base * 1.6; zIndex = 3; }
      if (m.has(s, 'start')) { color = COLOURS.start; size = base * 1.6; zIndex = 3; }
      if (s === view.selected) { size = base * 2.2; zIndex = 5; }
      return { hidden: false, color, size, zIndex };
    }

    function arcStyle(a) {
      if (a >= nArcs) {  // a corridor drawn as one arc
        if (!view.corridors) return { hidden: true };
        return { hidden: false, color: COLOURS.corridor, size: 2.5, type: 'thick', zIndex: 2 };
      }
      const s = m.src[a], t = m.dst[a];
      if (!shownState(s) || !shownState(t) || asMass(s) || asMass(t)) return { hidden: true };
      // an arc keeps its program (type) when selected, so a selection redraws only itself
      const marked = onSolution[a] || (view.bottlenecks && neckArc[a]);
      const style = { hidden: false, size: marked ? 3 : 1, type: marked ? 'thick' : 'fast',
                      zIndex: marked ? 3 : 0 };
      if (selArc[a]) style.color = selArc[a] === 1 ? COLOURS.inArc : COLOURS.outArc;
      else if (view.bottlenecks && neckArc[a]) style.color = COLOURS.bottleneck;
      else if (onSolution[a]) style.color = COLOURS.solution;
      else style.color = isDead(t) ? COLOURS.deadArc : COLOURS.arc;
      return style;
    }

    // ---------------------------------------------------------------- the graphology graph
    const Graph = window.graphology.Graph;
    const graph = new Graph({ type: 'directed', multi: true, allowSelfLoops: true });
    view.shaped = { x: Float64Array.from(data.layout.x), y: Float64Array.from(data.layout.y) };
    view.pos = view.shaped;
    // the dead states and the arcs into them are added when first drawn one by one: on a
    // large level they are most of the graph, and a dead region drawn as a mass (the mass
    // layer below) does not need them
    let deadAdded = false;
    const addStates = (dead) => {
      for (let s = 0; s < m.n; s++) {
        if (isDead(s) === dead) graph.addNode(s, { x: view.pos.x[s], y: view.pos.y[s], size: 3 });
      }
      for (let a = 0; a < nArcs; a++) {
        if (isDead(m.dst[a]) === dead) graph.addDirectedEdgeWithKey(a, m.src[a], m.dst[a]);
      }
      runs.forEach(([from, to], k) => {
        if ((isDead(from) || isDead(to)) === dead) graph.addDirectedEdgeWithKey(nArcs + k, from, to);
      });
    };
    addStates(false);
    function needDeadArcs() {
      if (deadAdded || !(view.showDead || !liveDrawn)) return;
      deadAdded = true;
      addStates(true);
    }
    needDeadArcs();

    const R = window.Sigma.rendering;
    const renderer = new window.Sigma(graph, container, {
      renderLabels: false, renderEdgeLabels: false, enableEdgeEvents: false,
      defaultEdgeType: 'fast',
      edgeProgramClasses: { fast: R.EdgeLineProgram, thick: R.EdgeRectangleProgram },
      hideEdgesOnMove: nArcs > MANY_ARCS, zIndex: true, allowInvalidContainer: true,
      minCameraRatio: 0.0005, maxCameraRatio: 20, stagePadding: 20,
      doubleClickZoomingRatio: 1,  // clicks on two states in a row are not a zoom
      pickingDownSizingRatio: 4,
      nodeReducer: (key, attrs) => ({ ...attrs, ...stateStyle(+key) }),
      edgeReducer: (key, attrs) => ({ ...attrs, ...arcStyle(+key) }),
    });

    // the page's own frame timer: each render's duration and the time between renders
    const frames = { render: [], interval: [], last: 0, firstAt: 0 };
    let renderStart = 0;
    renderer.on('beforeRender', () => { renderStart = performance.now(); });
    renderer.on('afterRender', () => {
      const now = performance.now();
      frames.render.push(now - renderStart);
      if (frames.last) frames.interval.push(now - frames.last);
      frames.last = now;
      if (!frames.firstAt) frames.firstAt = now;
      drawMass();
      if (frames.render.length > 2000) { frames.render.splice(0, 1000); frames.interval.splice(0, 1000); }
    });

    // The dead region as one shaded mass: the density of the dead states on a grid over their
    // extent, blurred, made once per layout into an image that each frame only places.
    const MASS_GRID = 256;
    let mass = null;
    function massImage() {
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity, count = 0;
      for (let s = 0; s < m.n; s++) {
        if (!isDead(s)) continue;
        count++;
        x0 = Math.min(x0, view.pos.x[s]); x1 = Math.max(x1, view.pos.x[s]);
        y0 = Math.min(y0, view.pos.y[s]); y1 = Math.max(y1, view.pos.y[s]);
      }
      if (!count) return null;
      const pad = Math.max(x1 - x0, y1 - y0, 1) * 0.03;
      x0 -= pad; x1 += pad; y0 -= pad; y1 += pad;
      const side = Math.max(x1 - x0, y1 - y0);
      const W = Math.max(8, Math.round(MASS_GRID * (x1 - x0) / side));
      const H = Math.max(8, Math.round(MASS_GRID * (y1 - y0) / side));
      let grid = new Float32Array(W * H);
      for (let s = 0; s < m.n; s++) {
        if (!isDead(s)) continue;
        const i = Math.min(W - 1, Math.floor((view.pos.x[s] - x0) / (x1 - x0) * W));
        const j = Math.min(H - 1, Math.floor((y1 - view.pos.y[s]) / (y1 - y0) * H));
        grid[j * W + i] += 1;
      }
      for (let pass = 0; pass < 3; pass++) {  // a box blur, three times
        const out = new Float32Array(W * H);
        for (let j = 0; j < H; j++) {
          for (let i = 0; i < W; i++) {
            let sum = 0, k = 0;
            for (let dj = -1; dj <= 1; dj++) {
              for (let di = -1; di <= 1; di++) {
                const a = i + di, b = j + dj;
                if (a >= 0 && a < W && b >= 0 && b < H) { sum += grid[b * W + a]; k++; }
              }
            }
            out[j * W + i] = sum / k;
          }
        }
        grid = out;
      }
      const sorted = grid.filter((v) => v > 0).sort();
      const high = sorted.length ? sorted[Math.floor(0.95 * (sorted.length - 1))] : 1;
      const image = new ImageData(W, H);
      for (let c = 0; c < W * H; c++) {
        const v = Math.min(1, grid[c] / high);
        image.data[4 * c] = 217; image.data[4 * c + 1] = 120; image.data[4 * c + 2] = 108;
        image.data[4 * c + 3] = v > 0.01 ? Math.round(40 + 110 * v) : 0;
      }
      const canvas = document.createElement('canvas');
      canvas.width = W; canvas.height = H;
      canvas.getContext('2d').putImageData(image, 0, 0);
      return { canvas, x0, x1, y0, y1 };
    }

    function drawMass() {
      const r = wrap.getBoundingClientRect();
      const ratio = window.devicePixelRatio || 1;
      const w = Math.max(1, Math.round(r.width * ratio)), h = Math.max(1, Math.round(r.height * ratio));
      if (massCanvas.width !== w || massCanvas.height !== h) { massCanvas.width = w; massCanvas.height = h; }
      const ctx = massCanvas.getContext('2d');
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, w, h);
      if (!(view.deadMass && !view.showDead && liveDrawn)) return;
      if (!mass) mass = massImage();
      if (!mass) return;
      // image pixel (0, 0) is the top-left corner (x0, y1) of the dead states' extent
      const a = renderer.graphToViewport({ x: mass.x0, y: mass.y1 });
      const b = renderer.graphToViewport({ x: mass.x1, y: mass.y0 });
      ctx.setTransform(ratio * (b.x - a.x) / mass.canvas.width, 0, 0,
                       ratio * (b.y - a.y) / mass.canvas.height, ratio * a.x, ratio * a.y);
      ctx.imageSmoothingEnabled = true;
      ctx.drawImage(mass.canvas, 0, 0);
    }

    function refresh(states, arcs) {
      if (states || arcs) {
        renderer.refresh({ partialGraph: { nodes: (states || []).map(String), edges: (arcs || []).map(String) },
                           skipIndexation: true });
      } else {
        renderer.refresh();
      }
    }

    function fit() {
      let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
      for (let s = 0; s < m.n; s++) {
        if (!shownState(s) || asMass(s)) continue;
        x0 = Math.min(x0, view.pos.x[s]); x1 = Math.max(x1, view.pos.x[s]);
        y0 = Math.min(y0, view.pos.y[s]); y1 = Math.max(y1, view.pos.y[s]);
      }
      if (x0 === Infinity) { x0 = -1; x1 = 1; y0 = -1; y1 = 1; }
      const pad = Math.max(x1 - x0, y1 - y0, 1) * 0.02;
      renderer.setCustomBBox({ x: [x0 - pad, x1 + pad], y: [y0 - pad, y1 + pad] });
      renderer.getCamera().setState({ x: 0.5, y: 0.5, ratio: 1, angle: 0 });
      renderer.refresh();
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

    function markArcs(s, value, touched) {
      if (s < 0) return;
      for (let k = m.inStart[s]; k < m.inStart[s + 1]; k++) { selArc[m.inArcs[k]] = value && 1; touched.push(m.inArcs[k]); }
      for (let k = m.outStart[s]; k < m.outStart[s + 1]; k++) { selArc[m.outArcs[k]] = value && 2; touched.push(m.outArcs[k]); }
    }

    // select state s; ``standOn``: the player's square when the push that led there is known
    function select(s, standOn = -1) {
      const previous = view.selected;
      const touched = [];
      markArcs(previous, 0, touched);
      view.selected = s;
      view.standing = s >= 0 ? standingSquare(m, s, standOn) : -1;
      let whole = false;
      if (s >= 0 && !shownState(s)) {
        if (view.corridors && m.has(s, 'corridor')) setToggle('corridors', false, false);
        if (isDead(s)) { view.showDead = true; deadBox.checked = true; needDeadArcs(); }
        whole = true;
      }
      markArcs(s, 1, touched);
      const onPath = solution.indexOf(s);
      if (onPath >= 0) view.step = onPath;
      showState();
      showStep();
      if (whole) refresh();
      else refresh([previous, s].filter((x) => x >= 0 && graph.hasNode(x)), touched.filter((a) => graph.hasEdge(a)));
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

    function setToggle(name, on, redraw = true) {
      view[name] = on;
      toggleBoxes[name].checked = on;
      if (redraw) refresh();
    }

    // ---------------------------------------------------------------- input
    const hoverCard = el('div', { class: 'sx-hover', 'data-role': 'hover' });
    hoverCard.hidden = true;
    wrap.append(hoverCard);
    function showHover(s, px, py) {
      view.hovered = s;
      hoverCard.hidden = s < 0;
      hoverCard.textContent = '';
      if (s < 0) return;
      const d = st.distance[s];
      hoverCard.append(el('div', {}, `#${st.id[s]}: ${d >= 0 ? d + ' to goal' : 'dead'}`),
                       drawBoard(s, 'hover-board', 140));
      const r = wrap.getBoundingClientRect();
      const w = hoverCard.offsetWidth, h = hoverCard.offsetHeight;
      hoverCard.style.left = Math.max(0, px + 16 + w > r.width ? px - 16 - w : px + 16) + 'px';
      hoverCard.style.top = Math.max(0, py + 16 + h > r.height ? py - 16 - h : py + 16) + 'px';
    }
    renderer.on('enterNode', ({ node, event }) => showHover(+node, event.x, event.y));
    renderer.on('leaveNode', () => showHover(-1, 0, 0));
    renderer.on('clickNode', ({ node }) => select(+node));
    renderer.on('doubleClickNode', ({ node }) => select(+node));  // quick clicks on two states

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
      needDeadArcs();
      fit();
    });
    for (const [name] of TOGGLES) {
      toggleBoxes[name].addEventListener('change', () => {
        setToggle(name, toggleBoxes[name].checked);
        if (name === 'deadMass' || name === 'corridors') fit();
      });
    }

    function setLayout(name) {
      view.layoutName = name;
      layersBtn.setAttribute('aria-pressed', String(name === 'layers'));
      forceBtn.setAttribute('aria-pressed', String(name === 'force'));
      if (name === 'layers' && !view.layered) view.layered = layeredLayout(m);
      view.pos = name === 'layers' ? view.layered : view.shaped;
      mass = null;
      graph.updateEachNodeAttributes((key, attrs) => {
        attrs.x = view.pos.x[+key];
        attrs.y = view.pos.y[+key];
        return attrs;
      });
      root.dataset.layout = name;
      root.dataset.layoutDone = 'true';
      fit();
    }
    layersBtn.addEventListener('click', () => setLayout('layers'));
    forceBtn.addEventListener('click', () => setLayout('force'));

    fit();
    select(solution.length ? solution[0] : 0);
    root.dataset.layout = 'force';
    root.dataset.layoutDone = 'true';
    renderer.once('afterRender', () => {
      root.dataset.loadMs = String(Math.round(performance.now()));
      root.dataset.ready = 'true';
    });
    refresh();

    // Frame time while the view moves: the camera is moved a little on every animation
    // frame for ``count`` frames (or ``maxMs``, whichever comes first); the page's timer gives
    // each render and the time between.
    function measureFrames(count = 120, maxMs = 30000) {
      return new Promise((resolve) => {
        const camera = renderer.getCamera();
        const from = camera.getState();
        frames.render.length = 0; frames.interval.length = 0; frames.last = 0;
        let k = 0;
        const until = performance.now() + maxMs;
        const step = () => {
          k++;
          camera.setState({ x: from.x + 0.15 * Math.sin(k / 15), y: from.y + 0.1 * Math.cos(k / 20),
                            ratio: from.ratio * (1 + 0.5 * Math.sin(k / 30)) });
          if (k < count && performance.now() < until) { requestAnimationFrame(step); return; }
          requestAnimationFrame(() => {
            camera.setState(from);
            const stats = (xs) => {
              const sorted = [...xs].sort((a, b) => a - b);
              const at = (q) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : null;
              return { count: sorted.length, median: at(0.5), p95: at(0.95), max: sorted.length ? sorted[sorted.length - 1] : null };
            };
            resolve({ render: stats(frames.render), interval: stats(frames.interval) });
          });
        };
        requestAnimationFrame(step);
      });
    }

    // what tests and scripts use: screen position of a state, selection by id, the styles
    const api = {
      view,
      renderer,
      select,
      goStep,
      setLayout,
      setToggle,
      fit,
      measureFrames,
      frames,
      localIndex: (id) => st.id.indexOf(id),
      screenPosition(s) {
        const r = container.getBoundingClientRect();
        const p = renderer.graphToViewport({ x: view.pos.x[s], y: view.pos.y[s] });
        return { x: r.left + p.x, y: r.top + p.y };
      },
      stateStyle,
      arcStyle,
      counts() {
        let states = 0, arcs = 0, mass = 0;
        for (let s = 0; s < m.n; s++) {
          if (shownState(s) && asMass(s)) mass++;
          else if (!stateStyle(s).hidden) states++;
        }
        for (let a = 0; a < nArcs + runs.length; a++) if (!arcStyle(a).hidden) arcs++;
        return { states, arcs, mass };
      },
      arcMoves: (a) => arcMoves(m, a),
      xsb: (s) => xsb(m, s, standingSquare(m, s, -1)),
    };
    root.explorer = api;
    return api;
  }

  return { mount, COLOURS, SCC_COLOURS };
})();

if (typeof window !== 'undefined') window.SokobanExplorer = SokobanExplorer;
