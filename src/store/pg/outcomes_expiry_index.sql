-- PostgreSQL schema version 7: the index of closed checks also orders open ones by age, so
-- that dropping a project's expired open checks at each check reads only those (SQLite
-- migration 20). Never edit: a change is a new migration.

DROP INDEX check_predictions_closed;
CREATE INDEX check_predictions_closed ON check_predictions (project, closed_us, created_us);
