
-------------------------------------------------------------------------------
-- Waits indexed by kind, with disjoint predicates
-------------------------------------------------------------------------------
-- task_waits_target (kind, tenant_key, target) also matched a lookup of child
-- waits by kind alone: a plan made while docket.task_waits was empty (a
-- worker's first completion) could look a finishing task's parents up that
-- way and keep reading every child wait on each completion. Each kind now has
-- its own index, and a lookup of one kind can use no other.
DROP INDEX docket.task_waits_target;
CREATE INDEX task_waits_event ON docket.task_waits (tenant_key, target) WHERE kind = 'event';
