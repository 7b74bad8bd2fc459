#!/bin/bash
# Container entrypoint that behaves like the official tensorflow/serving image's
# /usr/bin/tf_serving_entrypoint.sh: gRPC on 8500, REST on 8501, the model at
# ${MODEL_BASE_PATH}/${MODEL_NAME} (defaults /models/model), every argument passed through, and
# the later flags winning (`docker run ... --rest_api_port=0` disables REST as it does there).
#
# The one deliberate difference from running `tfpilot serve` by hand: inside a container the
# server must be reachable through the published ports, so this script binds 0.0.0.0 (the
# image's behaviour); outside a container tfpilot binds 127.0.0.1 unless --host says otherwise.
set -euo pipefail
MODEL_NAME="${MODEL_NAME:-model}"
MODEL_BASE_PATH="${MODEL_BASE_PATH:-/models}"
TFPILOT="${TFPILOT:-tfpilot}"
case "$MODEL_NAME" in
  */*|""|.|..) echo "error: MODEL_NAME must be a single name (letters, digits, _ - .), got '$MODEL_NAME'" >&2; exit 2 ;;
esac
exec $TFPILOT serve \
  --host="${TFPILOT_HOST:-0.0.0.0}" \
  --port=8500 \
  --rest_api_port=8501 \
  --model_name="${MODEL_NAME}" \
  --model_base_path="${MODEL_BASE_PATH}/${MODEL_NAME}" \
  "$@"
