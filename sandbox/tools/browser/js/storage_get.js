// Returns the page's origin and its localStorage items, or null for pages
// without a web origin.
function() {
  if (!/^https?:$/.test(location.protocol)) return null;
  const items = [];
  try {
    for (let i = 0; i < localStorage.length; i++) {
      const k = localStorage.key(i);
      items.push({name: k, value: localStorage.getItem(k)});
    }
  } catch (e) {
    return null;
  }
  return {origin: location.origin, localStorage: items};
}
