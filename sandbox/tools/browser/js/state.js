// Numbers the visible interactive elements of the page from 0, in document
// order, marking each with data-acs-index, and describes them. near tells
// whether an element is within a viewport's height of the viewport.
function(opts) {
  const all = acsAll(document, []);
  for (const el of all) {
    if (el.hasAttribute(ACS_ATTR)) el.removeAttribute(ACS_ATTR);
  }
  const ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'tab', 'menuitem', 'menuitemcheckbox',
    'menuitemradio', 'option', 'switch', 'textbox', 'combobox', 'searchbox', 'slider', 'spinbutton', 'treeitem']);
  function interactive(el) {
    const tag = el.tagName.toLowerCase();
    if (tag === 'a' || tag === 'area') return el.hasAttribute('href');
    if (tag === 'button' || tag === 'select' || tag === 'textarea' || tag === 'summary') return true;
    if (tag === 'input') return (el.getAttribute('type') || '').toLowerCase() !== 'hidden';
    if (el.hasAttribute('onclick')) return true;
    if (ROLES.has((el.getAttribute('role') || '').toLowerCase())) return true;
    const ti = el.getAttribute('tabindex');
    if (ti !== null && ti.trim() !== '-1') return true;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return true;
    return false;
  }
  const elements = [];
  let more = 0;
  for (const el of all) {
    if (!interactive(el) || !acsVisible(el)) continue;
    if (elements.length >= opts.max) {
      more++;
      continue;
    }
    el.setAttribute(ACS_ATTR, String(elements.length));
    const d = acsDescribe(el);
    const r = el.getBoundingClientRect();
    d.near = r.bottom >= -window.innerHeight && r.top <= 2 * window.innerHeight;
    elements.push(d);
  }
  return {url: location.href, title: document.title, elements: elements, more: more, scroll: acsScrollInfo()};
}
