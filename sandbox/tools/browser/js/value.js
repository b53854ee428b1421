// Reads back what element opts.index holds after typing.
function(opts) {
  const el = acsFind(opts.index);
  if (!el) return null;
  if ('value' in el && (el.tagName === 'INPUT' || el.tagName === 'TEXTAREA')) return el.value;
  return el.innerText;
}
