#!/usr/bin/env bash
# Debian's Chromium and ChromeDriver for scripts/site_screenshots.py (/usr/bin/chromium, /usr/bin/chromedriver),
# from the distribution's packages: nothing else is downloaded. Run by .ci/run and the GitHub workflow.
set -euo pipefail
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq chromium chromium-driver > /dev/null
chromium --version
