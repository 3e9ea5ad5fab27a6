-- display_name is an admin's free-text name for people (admin.v1
-- Admin.display_name), at most 256 characters; empty when none was given.
ALTER TABLE admins
    ADD COLUMN display_name text NOT NULL DEFAULT '',
    ADD CONSTRAINT admins_display_name_length CHECK (char_length(display_name) <= 256);
