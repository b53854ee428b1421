// Finds element opts.index, scrolls it into view and tells where to click it.
function(opts) {
  const el = acsFind(opts.index);
  if (!el) return {found: false};
  el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  const r = el.getBoundingClientRect();
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  let hit = null;
  try {
    const root = el.getRootNode();
    hit = (root && root.elementFromPoint ? root : document).elementFromPoint(x, y);
  } catch (e) {}
  const inView = r.width > 0 && r.height > 0 && x >= 0 && y >= 0 && x < window.innerWidth && y < window.innerHeight;
  const link = el.closest('a[href],area[href]');
  const tag = el.tagName.toLowerCase();
  const type = (el.getAttribute('type') || '').toLowerCase();
  let submits = false;
  if (tag === 'button' && (type === '' || type === 'submit')) submits = !!el.form;
  if (tag === 'input' && (type === 'submit' || type === 'image')) submits = !!el.form;
  let navigates = false;
  if (link) {
    const raw = link.getAttribute('href') || '';
    navigates = !/^\s*(#|javascript:)/i.test(raw);
  }
  return {
    found: true,
    x: x,
    y: y,
    mouse: inView && !!hit && (hit === el || el.contains(hit)),
    desc: acsDescribe(el),
    href: link ? link.href : '',
    target: link ? (link.getAttribute('target') || '') : '',
    navigates: navigates || submits,
    disabled: !!el.disabled,
  };
}
