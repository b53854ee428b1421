// Helpers shared by every script. Each script runs as
// (function(){ <common.js> return (<script>)(<args>); })()
// so nothing here leaks into the page's global scope.
const ACS_ATTR = 'data-acs-index';

// acsAll lists the elements of root in document order, descending into open
// shadow roots right after their host.
function acsAll(root, out) {
  for (const el of root.querySelectorAll('*')) {
    out.push(el);
    if (el.shadowRoot) acsAll(el.shadowRoot, out);
  }
  return out;
}

// acsFind returns the element that the last get_state numbered i, or null.
function acsFind(i) {
  const want = String(i);
  const el = document.querySelector('[' + ACS_ATTR + '="' + want + '"]');
  if (el) return el;
  for (const e of acsAll(document, [])) {
    if (e.getAttribute(ACS_ATTR) === want) return e;
  }
  return null;
}

function acsText(s, max) {
  s = String(s == null ? '' : s).replace(/\s+/g, ' ').trim();
  if (max && s.length > max) s = s.slice(0, max - 1) + '\u2026';
  return s;
}

function acsVisible(el) {
  if (el.checkVisibility && !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
}

function acsScrollInfo() {
  const se = document.scrollingElement || document.documentElement;
  return {
    y: Math.round(window.scrollY),
    height: Math.round(se ? se.scrollHeight : 0),
    viewport: Math.round(window.innerHeight),
  };
}

const ACS_TEXT_INPUTS = new Set(['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number']);

// acsDescribe summarises an element for the model: its tag, a few telling
// attributes and its text.
function acsDescribe(el) {
  const tag = el.tagName.toLowerCase();
  const attrs = [];
  const add = (k, v) => {
    if (v === null || v === undefined) return;
    v = acsText(v, 120);
    if (v !== '') attrs.push([k, v]);
  };
  const flag = (k) => attrs.push([k, null]);
  const type = tag === 'input' ? (el.getAttribute('type') || 'text').toLowerCase() : '';
  if (tag === 'input') add('type', type);
  add('name', el.getAttribute('name'));
  add('role', el.getAttribute('role'));
  if (tag === 'a' || tag === 'area') {
    add('href', el.getAttribute('href'));
    const tg = el.getAttribute('target');
    if (tg && tg !== '_self') add('target', tg);
  }
  add('placeholder', el.getAttribute('placeholder'));
  if (tag === 'textarea' || (tag === 'input' && type !== 'password' && !['checkbox', 'radio', 'file', 'image'].includes(type))) {
    add('value', el.value);
  }
  if (tag === 'select') {
    const o = el.selectedOptions && el.selectedOptions[0];
    if (o) add('value', o.text);
    add('options', Array.from(el.options).slice(0, 12).map((o) => acsText(o.text, 30)).join(' | ') + (el.options.length > 12 ? ' | \u2026' : ''));
  }
  add('aria-label', el.getAttribute('aria-label'));
  add('title', el.getAttribute('title'));
  if ((type === 'checkbox' || type === 'radio') && el.checked) flag('checked');
  if (el.disabled) flag('disabled');
  if (el.isContentEditable && tag !== 'input' && tag !== 'textarea') flag('contenteditable');
  let text = '';
  if (!['input', 'textarea', 'select'].includes(tag)) {
    text = acsText(el.innerText, 100);
    if (!text) {
      const img = el.querySelector('img[alt]');
      if (img) add('alt', img.getAttribute('alt'));
    }
  }
  return {tag: tag, attrs: attrs, text: text};
}
