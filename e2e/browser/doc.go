// Package browser holds the web view's test in a real browser: headless
// Chromium (Debian's chromium package, which .ci/run installs) driven by
// chromedp against two real `capsule node --ui` processes on the model
// simulator. It has no code outside its tests, and nothing imports it.
package browser
