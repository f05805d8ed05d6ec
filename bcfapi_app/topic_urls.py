"""Routes of BCF API 3.0 topics and everything under them (H7's part of docs/decisions/0010), included by
bcfapi_app/urls.py. The access middleware takes the scope from the `project_id` kwarg; the names are those of
viewer_gateway/access_rules.py. topics/events and topics/comments/events come before topics/<topic_guid>."""

from django.urls import path

from bcfapi_app import comment_views, document_views, file_views, topic_views, viewpoint_views

PROJECT = "bcf/3.0/projects/<str:project_id>"
TOPIC = f"{PROJECT}/topics/<str:topic_guid>"
VIEWPOINT = f"{TOPIC}/viewpoints/<str:viewpoint_guid>"

urlpatterns = [
    path(f"{PROJECT}/files_information", file_views.FilesInformationView.as_view(), name="bcf-files-information"),
    path(f"{PROJECT}/topics", topic_views.TopicListView.as_view(), name="bcf-topics"),
    path(f"{PROJECT}/topics/events", topic_views.TopicsEventsView.as_view(), name="bcf-topics-events"),
    path(f"{PROJECT}/topics/comments/events", comment_views.CommentsEventsView.as_view(), name="bcf-comments-events"),
    path(TOPIC, topic_views.TopicDetailView.as_view(), name="bcf-topic"),
    path(f"{TOPIC}/files", file_views.TopicFilesView.as_view(), name="bcf-topic-files"),
    path(f"{TOPIC}/related_topics", topic_views.RelatedTopicsView.as_view(), name="bcf-related-topics"),
    path(f"{TOPIC}/events", topic_views.TopicEventsView.as_view(), name="bcf-topic-events"),
    path(f"{TOPIC}/document_references", document_views.DocumentReferenceListView.as_view(), name="bcf-document-references"),
    path(f"{TOPIC}/document_references/<str:reference_guid>", document_views.DocumentReferenceDetailView.as_view(), name="bcf-document-reference"),
    path(f"{TOPIC}/comments", comment_views.CommentListView.as_view(), name="bcf-comments"),
    path(f"{TOPIC}/comments/<str:comment_guid>", comment_views.CommentDetailView.as_view(), name="bcf-comment"),
    path(f"{TOPIC}/comments/<str:comment_guid>/events", comment_views.CommentEventsView.as_view(), name="bcf-comment-events"),
    path(f"{TOPIC}/viewpoints", viewpoint_views.ViewpointListView.as_view(), name="bcf-viewpoints"),
    path(VIEWPOINT, viewpoint_views.ViewpointDetailView.as_view(), name="bcf-viewpoint"),
    path(f"{VIEWPOINT}/snapshot", viewpoint_views.ViewpointSnapshotView.as_view(), name="bcf-viewpoint-snapshot"),
    path(f"{VIEWPOINT}/bitmaps/<str:bitmap_guid>", viewpoint_views.ViewpointBitmapView.as_view(), name="bcf-viewpoint-bitmap"),
    path(f"{VIEWPOINT}/selection", viewpoint_views.ViewpointSelectionView.as_view(), name="bcf-viewpoint-selection"),
    path(f"{VIEWPOINT}/coloring", viewpoint_views.ViewpointColoringView.as_view(), name="bcf-viewpoint-coloring"),
    path(f"{VIEWPOINT}/visibility", viewpoint_views.ViewpointVisibilityView.as_view(), name="bcf-viewpoint-visibility"),
    path(f"{PROJECT}/documents", document_views.DocumentListView.as_view(), name="bcf-documents"),
    path(f"{PROJECT}/documents/<str:document_guid>", document_views.DocumentDetailView.as_view(), name="bcf-document"),
]
