// Sets localStorage items on the page's origin; returns how many were set.
function(items) {
  let n = 0;
  for (const it of items) {
    localStorage.setItem(it.name, it.value);
    n++;
  }
  return n;
}
