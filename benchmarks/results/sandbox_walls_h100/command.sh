#!/usr/bin/env bash
# One device call: the GPU tests of the judge's walls and checks, then what a judgment costs against the baseline tree.
set -u
mkdir -p /tmp/s && tar -xJf .whl/site312.tar.xz -C /tmp/s
export PYTHONPATH=/tmp/s/site312:$PWD PYTHONUNBUFFERED=1 HOME=/tmp/kphome KERNELPRO_FORECAST__DATASET=/tmp/kphome/judged.jsonl
mkdir -p $HOME
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/gpu.txt 2>&1
python3 -c "import torch, pydantic, langchain_core; print(torch.__version__, torch.cuda.get_device_name())" 2>&1 | tee -a $OUT/gpu.txt
python3 -c "import sys; sys.argv=['kernelpro','doctor']; from kernelpro.cli import main; main()" 2>&1 | tail -30 > $OUT/doctor.txt
set -o pipefail
timeout ${TESTS_S:-270} python3 -m pytest tests/gpu/test_sandbox_gpu.py tests/gpu/test_cuda_judge.py tests/gpu/test_memo_cheats_gpu.py tests/gpu/test_real_patterns.py tests/gpu/test_recipes_gpu.py -n 8 -p no:cacheprovider -q -rfEs -o addopts="" --timeout 200 2>&1 | tee $OUT/gpu_tests.log | tail -40
timeout ${COST_S:-260} python3 benchmarks/judge_cost.py --device cuda --baseline .baseline --repeats 2 --timing-budget-s 1.0 --out $OUT/judge_cost.json 2>&1 | tee $OUT/judge_cost.log | tail -30
cd $OUT && tar -czf results.tgz *.txt *.log *.json 2>/dev/null; ls -la $OUT
