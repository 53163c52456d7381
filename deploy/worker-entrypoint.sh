#!/bin/sh
# Entry point of the worker images: gives this container's Celery node a host part no other copy has,
# in WORKER_HOST, which `python -m shared.worker <name>` (the images' command) puts in the
# node's name in place of Celery's `%h`, then runs the command.
#
# Scaled copies (`--scale mapper=2`) on one host's network share its hostname, so `mapper@%h` would
# name both alike and Flower and /healthz would count one worker. The host part written to
# /tmp/celery-node-host is what the compose healthcheck pings. With HINDSIGHT_XVFB_DISPLAY set (the
# scraper image), a virtual screen runs first so a headful Chromium has a display.
set -eu
node_host="${HOSTNAME:-$(hostname)}-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$node_host" > /tmp/celery-node-host
export WORKER_HOST="$node_host"
if [ -n "${HINDSIGHT_XVFB_DISPLAY:-}" ]; then
  Xvfb "$HINDSIGHT_XVFB_DISPLAY" -screen 0 1280x1024x24 -nolisten tcp -nolisten local >/tmp/xvfb.log 2>&1 &
  export DISPLAY="$HINDSIGHT_XVFB_DISPLAY"
  for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do  # up to 4 s for its socket
    [ -S "/tmp/.X11-unix/X${DISPLAY#:}" ] && break
    sleep 0.2
  done
fi
exec "$@"
