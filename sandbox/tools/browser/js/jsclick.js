// Clicks element opts.index with HTMLElement.click(), for elements that a
// mouse cannot reach (covered or off screen).
function(opts) {
  const el = acsFind(opts.index);
  if (!el) return false;
  el.click();
  return true;
}
