"""Pages of the dashboard's second half (sessions, recall files, instructions, injection
preview, bank, members and tokens, settings). Project pages take `slug` and use
memoryhub.web.access.project_view; their names appear in memoryhub.web.nav.PROJECT_NAV.

Links the first half makes once these names reverse (and skips until then):
  web:session  kwargs slug, ref (a session's id or external id, as in the API); the memory
               page appends #record-<index> for the first record of a memory's source range.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from memoryhub.web.views import (
    admin_bank,
    admin_interchange,
    admin_members,
    admin_preview,
    admin_recall,
    admin_sessions,
    admin_settings,
)

P = "p/<slug:slug>/"

urlpatterns: list[URLPattern | URLResolver] = [
    path(P + "sessions/", admin_sessions.session_list, name="sessions"),
    path(P + "sessions/<str:ref>/", admin_sessions.session_detail, name="session"),
    path(P + "sessions/<str:ref>/extract/", admin_sessions.session_extract, name="session_extract"),
    path(P + "recall-files/", admin_recall.recall_file_list, name="recall_files"),
    path(P + "recall-files/new/", admin_recall.recall_file_edit, name="recall_file_new"),
    path(
        P + "recall-files/delete/<str:scope>/<path:path>",
        admin_recall.recall_file_delete,
        name="recall_file_delete",
    ),
    path(
        P + "recall-files/<str:scope>/<path:path>",
        admin_recall.recall_file_edit,
        name="recall_file",
    ),
    path(P + "instructions/", admin_recall.instructions, name="instructions"),
    path(P + "instructions/new/", admin_recall.instruction_edit, name="instruction_new"),
    path(P + "instructions/mine/", admin_recall.user_instruction_save, name="user_instructions"),
    path(P + "instructions/file/<path:path>", admin_recall.instruction_edit, name="instruction"),
    path(
        P + "instructions/delete/<path:path>",
        admin_recall.instruction_delete,
        name="instruction_delete",
    ),
    path(P + "preview/", admin_preview.preview, name="preview"),
    path(P + "bank/", admin_bank.bank, name="bank"),
    path(P + "bank/progress/", admin_bank.rebuild_progress, name="bank_progress"),
    path(P + "bank/enqueue/", admin_bank.bank_enqueue, name="bank_enqueue"),
    path(P + "bank/dream/", admin_bank.bank_dream, name="bank_dream"),
    path(P + "bank/clear/", admin_bank.bank_clear, name="bank_clear"),
    path(P + "bank/rebuild/", admin_bank.bank_rebuild, name="bank_rebuild"),
    path(P + "members/", admin_members.members, name="members"),
    path(P + "members/add/", admin_members.member_add, name="member_add"),
    path(P + "members/<str:username>/role/", admin_members.member_role, name="member_role"),
    path(P + "members/<str:username>/remove/", admin_members.member_remove, name="member_remove"),
    path(P + "tokens/new/", admin_members.token_create, name="token_create"),
    path(P + "tokens/<uuid:token_id>/revoke/", admin_members.token_revoke, name="token_revoke"),
    path(P + "import-export/", admin_interchange.interchange, name="interchange"),
    path(
        P + "import-export/import/",
        admin_interchange.interchange_import,
        name="interchange_import",
    ),
    path(P + "settings/", admin_settings.settings_page, name="settings"),
    path(P + "delete/", admin_settings.project_delete, name="project_delete"),
    path(P + "settings/<str:section>/", admin_settings.settings_save, name="settings_save"),
]
