"""A thread's default id is a run id: a problem's name of any length must give one the chat accepts."""

from __future__ import annotations

from kernelpro.chat.files import ChatFiles
from kernelpro.runs.files import RUN_ID_MAX, new_run_id


def test_a_long_problem_name_gives_a_thread_id_the_chat_accepts(tmp_path):
    name = "level3_problem_with_a_very_long_descriptive_name_of_sixty_characters_or_more"
    thread_id = new_run_id(name)
    assert len(thread_id) <= RUN_ID_MAX
    assert "level3_problem_with" in thread_id
    files = ChatFiles.create(tmp_path, thread_id, {"problem": name})
    assert files.meta_path.is_file()


def test_a_name_of_no_usable_characters_still_gives_an_id(tmp_path):
    thread_id = new_run_id("!!!")
    assert thread_id.count("-") >= 3
    ChatFiles.create(tmp_path, thread_id, {})
