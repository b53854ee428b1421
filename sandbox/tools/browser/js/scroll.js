// Scrolls one viewport up (dir -1) or down (dir 1): the document, or when the
// document does not scroll, its largest scrollable element.
function(dir) {
  const se = document.scrollingElement || document.documentElement;
  let box = null;
  if (!se || se.scrollHeight <= window.innerHeight + 1) {
    let best = 0;
    for (const el of document.querySelectorAll('*')) {
      if (el.scrollHeight <= el.clientHeight + 1) continue;
      const oy = getComputedStyle(el).overflowY;
      if (!/(auto|scroll|overlay)/.test(oy)) continue;
      const area = el.clientWidth * el.clientHeight;
      if (area > best) { best = area; box = el; }
    }
  }
  if (box) {
    const before = box.scrollTop;
    box.scrollBy({top: dir * box.clientHeight, behavior: 'instant'});
    return {y: Math.round(box.scrollTop), height: Math.round(box.scrollHeight), viewport: Math.round(box.clientHeight),
      moved: box.scrollTop !== before, element: true};
  }
  const before = window.scrollY;
  window.scrollBy({top: dir * window.innerHeight, behavior: 'instant'});
  const info = acsScrollInfo();
  info.moved = window.scrollY !== before;
  info.element = false;
  return info;
}
