ALTER TABLE admins DROP COLUMN display_name;
