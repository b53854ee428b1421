package browser

import _ "embed"

// The page scripts. Each but common.js is a function expression; script()
// wraps it with common.js and calls it with JSON arguments.
var (
	//go:embed js/common.js
	jsCommon string
	//go:embed js/state.js
	jsState string
	//go:embed js/click.js
	jsClick string
	//go:embed js/jsclick.js
	jsJSClick string
	//go:embed js/type.js
	jsType string
	//go:embed js/value.js
	jsValue string
	//go:embed js/scroll.js
	jsScroll string
	//go:embed js/content.js
	jsContent string
	//go:embed js/storage_get.js
	jsStorageGet string
	//go:embed js/storage_set.js
	jsStorageSet string
)
