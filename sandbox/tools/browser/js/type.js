// Prepares element opts.index for typing: focuses it and clears it. A select
// gets the option whose text or value is opts.text chosen instead.
function(opts) {
  const el = acsFind(opts.index);
  if (!el) return {found: false};
  const tag = el.tagName.toLowerCase();
  const desc = acsDescribe(el);
  const type = (el.getAttribute('type') || '').toLowerCase();
  let kind = 'other';
  if (tag === 'textarea') kind = 'textarea';
  else if (tag === 'input') kind = ACS_TEXT_INPUTS.has(type) ? 'input' : 'other';
  else if (tag === 'select') kind = 'select';
  else if (el.isContentEditable) kind = 'editable';
  const res = {found: true, kind: kind, desc: desc, type: type};
  if (kind === 'other') return res;
  if (el.disabled) { res.disabled = true; return res; }
  if (el.readOnly) { res.readonly = true; return res; }
  el.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  el.focus();
  if (kind === 'select') {
    const want = acsText(opts.text).toLowerCase();
    const options = Array.from(el.options);
    const o = options.find((o) => acsText(o.text).toLowerCase() === want || o.value.toLowerCase() === want);
    res.options = options.map((o) => acsText(o.text, 60));
    if (!o) return res;
    el.value = o.value;
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    res.selected = acsText(o.text);
    return res;
  }
  if (kind === 'editable') {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    if (opts.text === '') document.execCommand('delete');
    return res;
  }
  const proto = kind === 'input' ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
  Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, '');
  el.dispatchEvent(new Event('input', {bubbles: true}));
  return res;
}
