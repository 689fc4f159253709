-- PostgreSQL schema version 3: every lesson, belief and directive belongs to a project
-- (src/project.rs; SQLite migrations 14-16). Rows stored before get the project '' (shown as
-- "(unassigned)"), which the operator reassigns with `console projects move`. Uniqueness and
-- the per-task indexes lead with the project. Never edit: a change is a new migration.

ALTER TABLE lessons ADD COLUMN project TEXT NOT NULL DEFAULT '';
DROP INDEX lessons_task_key_strategy;
DROP INDEX lessons_active_by_key;
CREATE UNIQUE INDEX lessons_project_task_strategy
    ON lessons (project, task_key, normalised_strategy);
CREATE INDEX lessons_active_by_key ON lessons (project, task_key, is_active, seq);
CREATE INDEX lessons_project_active ON lessons (project, is_active, seq);
-- The task id's words (TaskKey::words_key), filled by the migration's data step in Rust.
ALTER TABLE lessons ADD COLUMN task_words TEXT NOT NULL DEFAULT '';
CREATE INDEX lessons_task_words ON lessons (project, task_words, is_active);

ALTER TABLE beliefs ADD COLUMN project TEXT NOT NULL DEFAULT '';
ALTER TABLE beliefs DROP CONSTRAINT beliefs_normalised_target_key;
ALTER TABLE beliefs ADD CONSTRAINT beliefs_project_target_key UNIQUE (project, normalised_target);
DROP INDEX beliefs_status;
CREATE INDEX beliefs_status ON beliefs (project, status);

ALTER TABLE directive_history ADD COLUMN project TEXT NOT NULL DEFAULT '';
DROP INDEX directive_history_task_key;
CREATE INDEX directive_history_task_key ON directive_history (project, task_key, created_us);
CREATE INDEX directive_history_project ON directive_history (project, created_us);
