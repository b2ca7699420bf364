// Load a speedscope file in speedscope itself (the npm package's build) in
// headless Chromium, as a user would: serve both over HTTP on 127.0.0.1,
// open index.html#profileURL=..., wait for the profile's name in the title,
// keep a screenshot, then print the title and the Sandwich view's table.
//
//   node speedscope-view.js NODE_MODULES CHROMIUM PROFILE SCREENSHOT.png [SEARCH]
//
// With SEARCH, the Sandwich view is searched for it (speedscope's Ctrl+F)
// before its table is read: the table shows only the rows that fit.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const [modules, chromiumPath, profile, screenshot, search] = process.argv.slice(2);
const { chromium } = require(path.join(modules, 'playwright-core'));
const release = path.join(modules, 'speedscope', 'dist', 'release');
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
                '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2', '.ico': 'image/x-icon' };

const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split(/[?#]/)[0]);
  const file = url === '/profile.json' ? profile : path.join(release, path.normalize(url).replace(/^(\.\.[/\\])+/, ''));
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
    res.end(data);
  });
});

(async () => {
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  let status = 0;
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + '/profile.json')}`);
    await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 30000 });
    await page.waitForTimeout(500);
    await page.screenshot({ path: screenshot });
    console.log(`title: ${await page.title()}`);
    await page.keyboard.press('3');   // speedscope's key for the Sandwich view
    await page.waitForTimeout(500);
    if (search) {
      await page.keyboard.press('Control+f');
      await page.keyboard.type(search);
      await page.waitForTimeout(500);
    }
    const text = await page.evaluate(() => document.body.innerText);
    for (const line of text.split('\n')) console.log(`sandwich: ${line}`);
    for (const e of errors) console.log(`error: ${e}`);
  } catch (e) {
    console.log(`failed: ${e.message.split('\n')[0]}`);
    status = 1;
  } finally {
    await browser.close();
    server.close();
  }
  process.exit(status);
})();
