#!/usr/bin/env bash
# End-to-end: the example app in WebKitGTK under Xvfb, driven through tauri-driver and
# WebKitWebDriver (Linux has no CDP for the WebView). Needs the Debian packages
# webkit2gtk-driver and xvfb, and tauri-driver (installed here with `cargo install --locked`
# into a cache folder when missing). Run by ./noxw -s tauri_plugin_e2e.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target="${CARGO_TARGET_DIR:-$here/target}"
tools="${COLOSSUS_TOOLS_DIR:-$HOME/.cache/colossus-sdks/tauri-driver}"
for program in Xvfb WebKitWebDriver; do
  command -v "$program" >/dev/null || { echo "missing $program (apt-get install xvfb webkit2gtk-driver)" >&2; exit 2; }
done
if [[ ! -x "$tools/bin/tauri-driver" ]]; then
  cargo install --locked --root "$tools" tauri-driver --version 2.1.0
fi
(cd "$here" && cargo build --locked)
app="$target/debug/colossus-desktop-example"

# WebKitGTK under Xvfb in a container: no DMA-BUF renderer and no compositing (without
# these WebKitWebDriver loses the browser and tauri-driver answers with a dropped connection).
export WEBKIT_DISABLE_DMABUF_RENDERER=1 WEBKIT_DISABLE_COMPOSITING_MODE=1
display=":$((90 + RANDOM % 9))"
Xvfb "$display" -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
port=$((4444 + RANDOM % 500))
DISPLAY="$display" "$tools/bin/tauri-driver" --port "$port" --native-driver "$(command -v WebKitWebDriver)" >/dev/null 2>&1 &
driver=$!
trap 'kill "$driver" "$xvfb" 2>/dev/null || true' EXIT
sleep 2
python3 "$here/e2e/check.py" "http://127.0.0.1:$port" "$app"
