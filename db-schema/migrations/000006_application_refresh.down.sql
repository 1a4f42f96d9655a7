ALTER TABLE applications DROP COLUMN refresh;
