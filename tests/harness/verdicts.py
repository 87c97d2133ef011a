"""What the judge says about every candidate under tests/data/candidates on the CPU, and with which problem.

The per-candidate tests check these one at a time; the pipeline tests check them in one batch. Candidates
that need a GPU (their CPU verdict depends on what is installed) are judged on the fresh-worker path instead
and compared with it.
"""

from __future__ import annotations

from tests.conftest import DATA

PROBLEM_OF = {
    "cheat_precision_bf16": "softmax_wide", "cheat_zeros_tiny": "softmax_wide", "honest_softmax": "softmax_wide",
    "honest_matmul_relu": "matmul_relu", "honest_split_stats": "split_stats", "honest_flatten_view": "flatten_view",
    "honest_inplace_relu": "inplace_relu", "honest_constant_gelu": "constant_gelu",
    "suspect_constant_zeros": "constant_gelu", "honest_dropout_alike": "dropout_softmax",
    "fault_dropout_own_draws": "dropout_softmax",
    "cheat_mkldnn_off": "matmul_relu", "cheat_functional_alias": "matmul_relu",
    "cheat_global_forward_hook": "matmul_relu", "honest_submodule_hooks": "matmul_relu",
    "cheat_precision_after_first": "softmax_wide", "cheat_unshifted_softmax": "softmax_wide",
    "honest_group_norm_mean": "group_norm_mean", "honest_softmax_long_rows": "softmax_long_rows",
    "cheat_uniform_softmax": "softmax_long_rows",
}

# (status, reason) on the CPU; reason None means the candidate passed.
EXPECTED_ON_CPU: dict[str, tuple[str, str | None]] = {
    "cheat_background_process": ("rejected", "background_process"),
    "cheat_background_thread": ("rejected", "background_thread"),
    "cheat_cached_pointer": ("rejected", "cached_output"),
    "fault_pinned_input": ("rejected", "cached_output"),
    "cheat_cached_replay": ("rejected", "cached_output"),
    "cheat_cached_id": ("rejected", "cached_output"),
    "cheat_cached_digest": ("ok", None),  # correct, and timed at its real cost: fresh inputs in every round
    "cheat_predicted_inputs": ("ok", None),  # its predictions never hit: no round's seed follows from another's
    "cheat_default_dtype": ("rejected", "judge_patch"),
    "cheat_mkldnn_off": ("rejected", "judge_patch"),
    "cheat_thread_oversubscription": ("rejected", "judge_patch"),
    "cheat_functional_alias": ("rejected", "judge_patch"),
    "cheat_global_forward_hook": ("rejected", "judge_patch"),
    "cheat_stack_patch": ("rejected", "judge_patch"),
    "cheat_precision_after_first": ("incorrect", "value_mismatch"),  # bfloat16 at the outputs' scale, any set
    "cheat_unshifted_softmax": ("incorrect", "nan_inf"),  # on the set shifted by harness.magnitude_shift
    "cheat_uniform_softmax": ("incorrect", "value_mismatch"),  # 1/N everywhere, compared at the outputs' scale
    "honest_softmax_long_rows": ("ok", None),
    "honest_group_norm_mean": ("ok", None),  # a rounding-only output: the reference's own error allowed for
    "cheat_forged_result": ("runtime_error", "exited"),
    "cheat_frame_walk": ("rejected", "judge_patch"),
    "cheat_freed_memory_timed": ("rejected", "stale_memory"),
    "cheat_gc_expected": ("rejected", "judge_patch"),
    "cheat_loopback": ("rejected", "network_access"),
    "cheat_loopback_hidden": ("rejected", "network_access"),
    "cheat_nan_wildcard": ("incorrect", "nan_inf"),
    "cheat_proc_environ": ("rejected", "process_snooping"),
    "cheat_plant_module": ("ok", None),  # alone it plants in its own directory; the judge's cache: test_sandbox_walls
    "cheat_plant_startup_file": ("ok", None),  # alone it plants nothing; the targets: test_worker_dirs_walls
    "cheat_plant_config": ("incorrect", "value_mismatch"),  # its zeros; the caller's directory: test_escape_walls
    "cheat_unix_socket": ("rejected", "network_access"),
    "cheat_unix_socket_hidden": ("rejected", "network_access"),
    "cheat_spawn_shell": ("rejected", "background_process"),
    "cheat_spawn_shell_hidden": ("rejected", "background_process"),
    "cheat_proc_environ_hidden": ("rejected", "process_snooping"),
    "cheat_ptrace": ("rejected", "process_snooping"),
    "cheat_self_mem": ("rejected", "self_modification"),
    "cheat_torch_replace": ("rejected", "judge_patch"),
    "cheat_warmup_detection": ("incorrect", "value_mismatch"),
    "cheat_input_mutation": ("rejected", "input_mutation"),
    "cheat_gc_referrers": ("rejected", "judge_patch"),
    "cheat_judge_patch": ("rejected", "judge_patch"),
    "cheat_l2_persistence": ("rejected", "l2_persistence"),
    "cheat_output_alias": ("rejected", "input_mutation"),  # it writes its input before returning it
    "cheat_precision_bf16": ("incorrect", "value_mismatch"),  # its error is 40x rtol at the outputs' scale
    "cheat_reference_subclass": ("rejected", "reference_reuse"),
    "cheat_reference_subclass_hidden": ("rejected", "reference_reuse"),
    "cheat_stale_memory": ("rejected", "stale_memory"),
    "cheat_sync_patch": ("rejected", "timer_patch"),
    "cheat_tensor_subclass": ("rejected", "tensor_subclass"),
    "cheat_timer_patch": ("rejected", "timer_patch"),
    "cheat_try_except_fallback": ("rejected", "try_except_fallback"),
    "cheat_zeros_tiny": ("incorrect", "value_mismatch"),
    "fault_bad_signature": ("compile_error", "bad_signature"),
    "fault_binary": ("compile_error", "not_python"),
    "fault_dropout_own_draws": ("incorrect", "value_mismatch"),
    "fault_exception": ("runtime_error", "exception"),
    "fault_gpu_out_of_memory": ("runtime_error", "gpu_out_of_memory"),
    "fault_exit_at_import": ("compile_error", "exit_at_import"),
    "fault_import_error": ("compile_error", "import_error"),
    "fault_infinite_loop": ("timeout", "wall_time"),
    "fault_memory_bomb": ("runtime_error", "memory_limit"),
    "fault_memory_creep": ("runtime_error", "memory_limit"),
    "fault_no_model_new": ("compile_error", "missing_model_new"),
    "fault_os_exit": ("runtime_error", "exited"),
    "fault_output_flood": ("ok", None),
    "fault_segfault": ("runtime_error", "crashed"),
    "fault_syntax": ("compile_error", "not_python"),
    "fault_sys_exit_forward": ("runtime_error", "exit_called"),
    "honest_dropout_alike": ("ok", None),
    "honest_dynamo_import": ("ok", None),
    "honest_env_probe": ("ok", None),
    "honest_extensions_dir_probe": ("ok", None),
    "honest_flatten_view": ("ok", None),
    "honest_inplace_relu": ("ok", None),
    "honest_matmul_relu": ("ok", None),
    "honest_scale_relu": ("ok", None),
    "honest_softmax": ("ok", None),
    "honest_split_stats": ("ok", None),
    "honest_constant_gelu": ("ok", None),  # passes; the problem is reported as degenerate
    "honest_gc_collect": ("ok", None),
    "honest_scratch_files": ("ok", None),
    "honest_unused_handler": ("ok", None),
    "honest_own_threads": ("ok", None),
    "honest_submodule_hooks": ("ok", None),
    "honest_thread_pool_joined": ("ok", None),
    "suspect_constant_zeros": ("ok", None),
    "suspect_output_reused": ("ok", None),
    "suspect_ghost_kernel": ("ok", None),  # NVRTC builds its kernel on the CPU too (the dev extra)
}
# suspect_* pass, but with a warning (or a problem finding) that says why their speedup is hollow.
WARNED: dict[str, str] = {
    "suspect_constant_zeros": "output_reused", "suspect_output_reused": "output_reused",
    "suspect_ghost_kernel": "ghost_kernel", "suspect_ghost_triton": "ghost_kernel",
    "suspect_graph_static_output": "output_reused",
}
# Their CPU verdict depends on the machine (a GPU runtime, Triton, nvcc, the CuTe DSL, a compile cache).
NEEDS_GPU = {"honest_cuda_scale_relu", "honest_triton_scale_relu", "honest_cubin_scale_relu",
             "honest_load_inline_scale_relu", "honest_cute_scale_relu", "fault_illegal_address",
             "fault_kernel_compile_error", "cheat_extra_stream", "honest_joined_stream", "honest_graph_capture",
             "suspect_graph_static_output", "suspect_ghost_triton"}


def all_candidates() -> list[str]:
    return sorted(path.stem for path in (DATA / "candidates").glob("*.py"))


def problem_of(name: str) -> str:
    return PROBLEM_OF.get(name, "scale_relu")
