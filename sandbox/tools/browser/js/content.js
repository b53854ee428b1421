// Renders the visible text of the page as markdown-ish text: headings, list
// items, paragraphs, table rows, and with opts.links links as [text](href).
function(opts) {
  const SKIP = new Set(['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'head', 'iframe', 'object',
    'embed', 'video', 'audio', 'select', 'option', 'datalist', 'meta', 'link', 'title', 'map']);
  const BLOCK = new Set(['address', 'article', 'aside', 'blockquote', 'body', 'details', 'dialog', 'dd', 'div', 'dl',
    'dt', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header', 'hgroup', 'html', 'legend', 'li', 'main',
    'nav', 'ol', 'p', 'section', 'summary', 'table', 'tbody', 'thead', 'tfoot', 'tr', 'ul', 'caption', 'menu']);
  const lines = [];
  let buf = '';
  let prefix = null;
  function flush() {
    const t = buf.replace(/\s+/g, ' ').trim();
    buf = '';
    if (!t) return;
    lines.push((prefix || '') + t);
    prefix = null;
  }
  function blank() {
    flush();
    if (lines.length && lines[lines.length - 1] !== '') lines.push('');
  }
  const lists = [];
  function children(node) {
    if (node.shadowRoot) return node.shadowRoot.childNodes;
    if (node.tagName === 'SLOT') {
      const a = node.assignedNodes();
      return a.length ? a : node.childNodes;
    }
    return node.childNodes;
  }
  function walk(node) {
    if (node.nodeType === Node.TEXT_NODE) {
      buf += node.nodeValue;
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
    if (node.nodeType === Node.ELEMENT_NODE) {
      const tag = node.tagName.toLowerCase();
      if (SKIP.has(tag)) return;
      if (node.checkVisibility && !node.checkVisibility({checkVisibilityCSS: true})) return;
      if (tag === 'br') { flush(); return; }
      if (tag === 'hr') { blank(); lines.push('---'); return; }
      if (/^h[1-6]$/.test(tag)) {
        blank();
        prefix = '#'.repeat(Number(tag[1])) + ' ';
        for (const c of children(node)) walk(c);
        flush();
        prefix = null;
        lines.push('');
        return;
      }
      if (tag === 'pre') {
        blank();
        const t = node.innerText.replace(/\s+$/, '');
        if (t) lines.push(t);
        lines.push('');
        return;
      }
      if (tag === 'input' || tag === 'textarea') {
        const type = (node.getAttribute('type') || 'text').toLowerCase();
        if (['submit', 'button', 'reset'].includes(type) && node.value) buf += ' [' + node.value + '] ';
        return;
      }
      if (tag === 'img') {
        const alt = acsText(node.getAttribute('alt'));
        if (alt && opts.links) buf += ' ' + alt + ' ';
        return;
      }
      if (opts.links && (tag === 'a' || tag === 'area') && node.hasAttribute('href')) {
        let t = acsText(node.innerText);
        if (!t) t = acsText(node.getAttribute('aria-label') || node.getAttribute('title') || '');
        if (!t) {
          const img = node.querySelector('img[alt]');
          if (img) t = acsText(img.getAttribute('alt'));
        }
        buf += ' [' + t + '](' + node.href + ') ';
        return;
      }
      if (tag === 'td' || tag === 'th') {
        if (node.cellIndex > 0) buf += ' | ';
        for (const c of children(node)) walk(c);
        return;
      }
      if (tag === 'ul' || tag === 'ol' || tag === 'menu') {
        flush();
        lists.push({ordered: tag === 'ol', n: 0});
        for (const c of children(node)) walk(c);
        lists.pop();
        flush();
        return;
      }
      if (tag === 'li') {
        flush();
        const l = lists[lists.length - 1];
        const indent = '  '.repeat(Math.max(0, lists.length - 1));
        if (l) {
          l.n++;
          prefix = indent + (l.ordered ? l.n + '. ' : '- ');
        } else {
          prefix = '- ';
        }
        for (const c of children(node)) walk(c);
        flush();
        prefix = null;
        return;
      }
      if (tag === 'p' || tag === 'blockquote' || tag === 'table' || tag === 'section' || tag === 'article') {
        blank();
        for (const c of children(node)) walk(c);
        blank();
        return;
      }
      if (BLOCK.has(tag)) {
        flush();
        for (const c of children(node)) walk(c);
        flush();
        return;
      }
    }
    for (const c of children(node)) walk(c);
  }
  if (document.body) walk(document.body);
  else if (document.documentElement) walk(document.documentElement);
  flush();
  while (lines.length && lines[lines.length - 1] === '') lines.pop();
  const out = [];
  for (const l of lines) {
    if (l === '' && out.length && out[out.length - 1] === '') continue;
    out.push(l);
  }
  return {url: location.href, title: document.title, text: out.join('\n')};
}
