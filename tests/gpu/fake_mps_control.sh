#!/usr/bin/env bash
# Stands in for nvidia-cuda-mps-control in tests. `-d` starts a detached
# "daemon" whose pid goes to $CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid;
# FAKE_MPS_START_DELAY_S makes -d return that much after the pid file is
# written; without -d it reads control commands on stdin. Clients are faked with files:
# $CUDA_MPS_PIPE_DIRECTORY/servers (pids) and clients_<server> (pids).
set -u
pipe=${CUDA_MPS_PIPE_DIRECTORY:?CUDA_MPS_PIPE_DIRECTORY unset}
: "${CUDA_MPS_LOG_DIRECTORY:?CUDA_MPS_LOG_DIRECTORY unset}"
pidfile=$pipe/nvidia-cuda-mps-control.pid
if [ "${1:-}" = "-d" ]; then
  setsid bash -c 'while true; do sleep 0.05; done' </dev/null >/dev/null 2>&1 &
  echo $! >"$pidfile"
  echo "fake control daemon started" >>"$CUDA_MPS_LOG_DIRECTORY/control.log"
  sleep "${FAKE_MPS_START_DELAY_S:-0}"  # a slow start: the pid file is there, -d not yet back
  exit 0
fi
if [ ! -f "$pidfile" ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "Cannot find MPS control daemon process" >&2
  exit 1
fi
while read -r cmd arg; do
  case "$cmd" in
    get_server_list) cat "$pipe/servers" 2>/dev/null || true ;;
    get_client_list) cat "$pipe/clients_$arg" 2>/dev/null || true ;;
    quit) kill "$(cat "$pidfile")"; rm -f "$pidfile" ;;
    *) echo "unknown command $cmd" ;;
  esac
done
