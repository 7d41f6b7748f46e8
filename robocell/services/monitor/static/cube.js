// Drawing a cube state (kociemba facelet string, faces U R F D L B, row-major) as a net
// in SVG and as a 3D view in CSS transforms. Sticker colours are the standard cube's.
"use strict";

const CubeView = (() => {
  const FACE_ORDER = ["U", "R", "F", "D", "L", "B"];
  // Colour of the sticker that belongs to each face's centre (western scheme).
  const STICKER_COLOURS = {
    U: "#f4f4ee", R: "#c41e3a", F: "#009e60", D: "#ffd500", L: "#ff5800", B: "#0051ba",
  };
  const UNKNOWN_COLOUR = "#555";
  // Position of each face in the cross-shaped net, in face units (column, row).
  const NET_POSITION = { U: [1, 0], L: [0, 1], F: [1, 1], R: [2, 1], B: [3, 1], D: [1, 2] };
  // CSS transform that carries a front-facing square to each face of the 3D cube.
  const FACE_TRANSFORM = {
    F: "", R: "rotateY(90deg)", B: "rotateY(180deg)", L: "rotateY(-90deg)",
    U: "rotateX(90deg)", D: "rotateX(-90deg)",
  };
  const SVG_NS = "http://www.w3.org/2000/svg";
  const DOUBTFUL = 0.6;  // a sticker read with less confidence is outlined in magenta

  function sizeOf(facelets) {
    const n = Math.round(Math.sqrt(facelets.length / 6));
    return n >= 1 && 6 * n * n === facelets.length ? n : 0;
  }

  function colourOf(letter) {
    return STICKER_COLOURS[letter] || UNKNOWN_COLOUR;
  }

  // Replace the content of `host` by an SVG net of `facelets`; confidences below
  // `doubtful` get a marked outline.
  function drawNet(host, facelets, confidence) {
    host.textContent = "";
    host.dataset.facelets = facelets || "";
    const n = facelets ? sizeOf(facelets) : 0;
    if (!n) {
      host.innerHTML = '<div class="muted">no state</div>';
      return;
    }
    const cell = 1, gap = 0.08, faceGap = 0.25;
    const faceSize = n * cell + faceGap;
    const svg = document.createElementNS(SVG_NS, "svg");
    svg.setAttribute("viewBox", `-0.1 -0.1 ${4 * faceSize + 0.2} ${3 * faceSize + 0.2}`);
    svg.setAttribute("class", "net-svg");
    svg.dataset.size = n;
    FACE_ORDER.forEach((face, f) => {
      const [col, row] = NET_POSITION[face];
      const g = document.createElementNS(SVG_NS, "g");
      g.dataset.face = face;
      for (let r = 0; r < n; r++) {
        for (let c = 0; c < n; c++) {
          const index = f * n * n + r * n + c;
          const rect = document.createElementNS(SVG_NS, "rect");
          rect.setAttribute("x", col * faceSize + c * cell + gap / 2);
          rect.setAttribute("y", row * faceSize + r * cell + gap / 2);
          rect.setAttribute("width", cell - gap);
          rect.setAttribute("height", cell - gap);
          rect.setAttribute("rx", 0.12);
          rect.setAttribute("fill", colourOf(facelets[index]));
          rect.dataset.index = index;
          rect.dataset.letter = facelets[index];
          if (confidence && confidence[index] !== undefined && confidence[index] < DOUBTFUL) {
            rect.setAttribute("class", "doubtful");
          }
          const title = document.createElementNS(SVG_NS, "title");
          title.textContent = `${face}${r * n + c + 1}: ${facelets[index]}` +
            (confidence && confidence[index] !== undefined
              ? ` (confidence ${confidence[index].toFixed(2)})` : "");
          rect.appendChild(title);
          g.appendChild(rect);
        }
      }
      svg.appendChild(g);
    });
    host.appendChild(svg);
  }

  // A 3D cube in CSS; drag to turn it. The view angles persist per host.
  function draw3d(host, facelets) {
    const n = facelets ? sizeOf(facelets) : 0;
    host.textContent = "";
    if (!n) return;
    if (!host.dataset.rx) { host.dataset.rx = "-28"; host.dataset.ry = "-38"; }
    const cube = document.createElement("div");
    cube.className = "cube3d";
    const apply = () => {
      cube.style.transform = `rotateX(${host.dataset.rx}deg) rotateY(${host.dataset.ry}deg)`;
    };
    apply();
    FACE_ORDER.forEach((face, f) => {
      const side = document.createElement("div");
      side.className = "side";
      side.style.transform = `${FACE_TRANSFORM[face]} translateZ(var(--half))`;
      side.style.gridTemplateColumns = `repeat(${n}, 1fr)`;
      for (let i = 0; i < n * n; i++) {
        const s = document.createElement("div");
        s.className = "sticker";
        s.style.background = colourOf(facelets[f * n * n + i]);
        side.appendChild(s);
      }
      cube.appendChild(side);
    });
    host.appendChild(cube);
    if (!host.dataset.draggable) {
      host.dataset.draggable = "1";
      let last = null;
      host.addEventListener("pointerdown", (e) => { last = [e.clientX, e.clientY]; host.setPointerCapture(e.pointerId); });
      host.addEventListener("pointerup", () => { last = null; });
      host.addEventListener("pointermove", (e) => {
        if (!last) return;
        host.dataset.ry = String(Number(host.dataset.ry) + (e.clientX - last[0]) * 0.6);
        host.dataset.rx = String(Math.max(-89, Math.min(89, Number(host.dataset.rx) - (e.clientY - last[1]) * 0.6)));
        last = [e.clientX, e.clientY];
        const c = host.querySelector(".cube3d");
        if (c) c.style.transform = `rotateX(${host.dataset.rx}deg) rotateY(${host.dataset.ry}deg)`;
      });
    }
  }

  return { drawNet, draw3d, sizeOf, colourOf, FACE_ORDER, STICKER_COLOURS, DOUBTFUL };
})();
