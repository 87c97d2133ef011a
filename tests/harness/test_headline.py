"""A verdict's message on one line (progress lines, reports, suite logs)."""

from kernelpro.harness.result import headline


def test_a_line_that_introduces_what_follows_takes_the_next_line_along():
    message = ("extension 'matmul_cuda' (line 125) does not build:\n\ncompiler: error: 'matmul_kernel' was not "
               "declared in this scope\n      4 | m.def(...)\n")
    assert headline(message) == ("extension 'matmul_cuda' (line 125) does not build: compiler: error: "
                                 "'matmul_kernel' was not declared in this scope")


def test_a_complete_first_line_stands_alone_and_is_cut_to_the_limit():
    assert headline("correct on 5 input sets\nmore detail") == "correct on 5 input sets"
    assert headline("x" * 500, 40) == "x" * 40
    assert headline("  \n ") == ""


def test_a_build_log_gives_its_first_error_not_its_command_line():
    message = ("extension 'l1' (line 195) does not build:\n/opt/gcc/bin/g++ main.o cuda.cuda.o -shared -o l1.so\n"
               "/usr/bin/ld: cuda.cuda.o: multiple definition of `PyInit_l1'; main.o: first defined here\n"
               "collect2: error: ld returned 1 exit status\n")
    assert headline(message).endswith("does not build: collect2: error: ld returned 1 exit status")
